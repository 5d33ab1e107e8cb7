import {
  REFRESH_GRANT_COLUMNS,
  codeFromRow,
  refreshGrantFromRow,
  type CodeRow,
  type RefreshGrantRow,
} from '../stores/oidc-rows.js';
import { TOKEN_WITH_GRANT } from '../stores/oidc-store.js';
import { emailFromRow, type EmailRow } from '../stores/email-store.js';
import { identityFromRow, type IdentityRow } from '../stores/identity-store.js';
import type { AccountState, GrantSubject } from '../interface.js';
import { liveAt } from '../stores/session-store.js';
import type { Sql } from './sql.js';

/**
 * The subject columns of a row whose account id is `identityId` (its identity joined as `i`)
 * and whose session id is `sessionId`, with the time in `now`: as `identities.state`,
 * `sessions.isLive`, `identities.get` and `emails.listByIdentity` would read them.
 */
const subjectColumns = (identityId: string, sessionId: string, now: string) => `
  i.state AS subject_state,
  row_to_json(i) AS subject_identity,
  EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = ${sessionId} AND ${liveAt(now)}) AS subject_session_live,
  (SELECT coalesce(json_agg(e ORDER BY e.created_at, e.email), '[]'::json) FROM emails e WHERE e.identity_id = ${identityId}) AS subject_emails`;

type SubjectRow = {
  subject_state: AccountState | null;
  subject_identity: IdentityRow | null;
  subject_session_live: boolean;
  subject_emails: EmailRow[];
};

const subjectFromRow = (row: SubjectRow): GrantSubject => ({
  state: row.subject_state,
  sessionLive: row.subject_session_live,
  identity: row.subject_identity && identityFromRow(row.subject_identity),
  emails: row.subject_emails.map(emailFromRow),
});

const CODE_WITH_SUBJECT = `SELECT c.*, ${subjectColumns('c.identity_id', 'c.session_id', '$2')}
  FROM oidc_codes c LEFT JOIN identities i ON i.identity_id = c.identity_id WHERE c.code_hash = $1`;

const REFRESH_WITH_SUBJECT = `SELECT ${REFRESH_GRANT_COLUMNS}, ${subjectColumns('g.identity_id', 'g.session_id', '$2')}
  FROM ${TOKEN_WITH_GRANT}
  LEFT JOIN identities i ON i.identity_id = g.identity_id WHERE t.token_hash = $1`;

/** `Storage.findCodeWithSubject` as one statement. */
export async function postgresCodeWithSubject(sql: Sql, codeHash: string, now: number) {
  const [row] = await sql.rows<CodeRow & SubjectRow>(CODE_WITH_SUBJECT, [codeHash, now]);
  return row ? { code: codeFromRow(row), subject: subjectFromRow(row) } : null;
}

/** `Storage.findRefreshWithSubject` as one statement. */
export async function postgresRefreshWithSubject(sql: Sql, tokenHash: string, now: number) {
  const [row] = await sql.rows<RefreshGrantRow & SubjectRow>(REFRESH_WITH_SUBJECT, [tokenHash, now]);
  return row ? { ...refreshGrantFromRow(row), subject: subjectFromRow(row) } : null;
}
