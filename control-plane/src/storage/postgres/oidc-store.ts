import {
  REFRESH_GRANT_COLUMNS,
  approvalFromRow,
  codeFromRow,
  codeToRow,
  grantFromRow,
  grantToRow,
  refreshFromRow,
  refreshGrantFromRow,
  refreshToRow,
  type ApprovalRow,
  type CodeRow,
  type RefreshGrantRow,
  type RefreshRow,
  type GrantRow,
} from '../rows.js';
import { emailFromRow, type EmailRow } from '../stores/email-store.js';
import { identityFromRow, type IdentityRow } from '../stores/identity-store.js';
import type { AccountState, CodeConsumption, GrantSubject, OidcStore, RefreshConsumption } from '../types.js';
import { liveAt } from '../stores/session-store.js';
import { insertOf, spendWith, type Sql, type SpendStatement } from './sql.js';

/**
 * Spends a one-time row in one round trip: the conditional UPDATE in `spent` marks it for
 * exactly one caller (a concurrent one on another replica waits for the row lock, re-reads the
 * committed row under READ COMMITTED and matches nothing); everyone else gets the row as it
 * stood. `spendWith` (sql.ts) puts writes between the two parts that land only with the spend.
 */
const spendOnce = (table: string, key: string, column: string, also = ''): SpendStatement => ({
  spent: `spent AS (UPDATE ${table} SET ${column} = $2${also} WHERE ${key} = $1 AND ${column} IS NULL RETURNING *)`,
  answer: `SELECT true AS fresh, * FROM spent
  UNION ALL
  SELECT false AS fresh, * FROM ${table} WHERE ${key} = $1 AND NOT EXISTS (SELECT 1 FROM spent)`,
});

/** A refresh token (`t`) joined with its grant (`g`), as `REFRESH_GRANT_COLUMNS` reads them. */
const TOKEN_WITH_GRANT = 'oidc_refresh_tokens t JOIN oidc_grants g ON g.grant_id = t.grant_id';

const SPEND_CODE = spendOnce('oidc_codes', 'code_hash', 'consumed_at', ', grant_id = $3');
const SPEND_REFRESH = spendOnce('oidc_refresh_tokens', 'token_hash', 'used_at');

/** `consumeCode` as a statement, with what its answer means. */
export const spendCode = (codeHash: string, at: number, grantId: string | null) => ({
  statement: SPEND_CODE,
  values: [codeHash, at, grantId],
  consumption: ([row]: Array<CodeRow & { fresh: boolean }>): CodeConsumption =>
    row ? { status: row.fresh ? 'consumed' : 'replayed', code: codeFromRow(row) } : { status: 'unknown' },
});

/** `consumeRefreshToken` as a statement, with what its answer means. */
export const spendRefreshToken = (tokenHash: string, at: number) => ({
  statement: SPEND_REFRESH,
  values: [tokenHash, at],
  consumption: ([row]: Array<RefreshRow & { fresh: boolean }>): RefreshConsumption =>
    row ? { status: row.fresh ? 'consumed' : 'reused', token: refreshFromRow(row) } : { status: 'unknown' },
});

export function postgresOidcStore(sql: Sql): OidcStore {
  return {
    insertCode: async (code) => {
      await sql.count(...insertOf('oidc_codes', codeToRow({ ...code, consumedAt: null, grantId: null })));
    },
    findCode: async (codeHash) => {
      const [row] = await sql.rows<CodeRow>('SELECT * FROM oidc_codes WHERE code_hash = $1', [codeHash]);
      return row ? codeFromRow(row) : null;
    },
    consumeCode: async (codeHash, at, grantId) => {
      const spend = spendCode(codeHash, at, grantId ?? null);
      return spend.consumption(await sql.rows(...spendWith(spend.statement, spend.values)));
    },
    insertGrant: async (grant) => {
      await sql.count(...insertOf('oidc_grants', grantToRow({ ...grant, revokedAt: null })));
    },
    getGrant: async (grantId) => {
      const [row] = await sql.rows<GrantRow>('SELECT * FROM oidc_grants WHERE grant_id = $1', [grantId]);
      return row ? grantFromRow(row) : null;
    },
    revokeGrant: async (grantId, at) =>
      (await sql.count('UPDATE oidc_grants SET revoked_at = $2 WHERE grant_id = $1 AND revoked_at IS NULL', [
        grantId,
        at,
      ])) === 1,
    // One transaction: the grants revoked and the unspent codes of those sessions dropped together.
    endSessionGrants: (sessionIds, at) =>
      sql.atomic(async (tx) => {
        const ids = [...new Set(sessionIds)];
        if (ids.length === 0) return [];
        const rows = await tx.rows<GrantRow>(
          'UPDATE oidc_grants SET revoked_at = $2 WHERE session_id = ANY($1::text[]) AND revoked_at IS NULL AND offline = 0 RETURNING *',
          [ids, at],
        );
        await tx.count('DELETE FROM oidc_codes WHERE session_id = ANY($1::text[]) AND consumed_at IS NULL', [ids]);
        return rows.map(grantFromRow);
      }),
    revokeClientGrants: (clientId, at) =>
      sql.atomic(async (tx) => {
        const rows = await tx.rows<GrantRow>(
          'UPDATE oidc_grants SET revoked_at = $2 WHERE client_id = $1 AND revoked_at IS NULL RETURNING *',
          [clientId, at],
        );
        await tx.count('DELETE FROM oidc_codes WHERE client_id = $1 AND consumed_at IS NULL', [clientId]);
        return rows.map(grantFromRow);
      }),
    insertRefreshToken: async (token) => {
      await sql.count(...insertOf('oidc_refresh_tokens', refreshToRow({ ...token, usedAt: null })));
    },
    findRefreshToken: async (tokenHash) => {
      const [row] = await sql.rows<RefreshRow>('SELECT * FROM oidc_refresh_tokens WHERE token_hash = $1', [tokenHash]);
      return row ? refreshFromRow(row) : null;
    },
    findRefreshGrant: async (tokenHash) => {
      const [row] = await sql.rows<RefreshGrantRow>(
        `SELECT ${REFRESH_GRANT_COLUMNS} FROM ${TOKEN_WITH_GRANT} WHERE t.token_hash = $1`,
        [tokenHash],
      );
      return row ? refreshGrantFromRow(row) : null;
    },
    consumeRefreshToken: async (tokenHash, at) => {
      const spend = spendRefreshToken(tokenHash, at);
      return spend.consumption(await sql.rows(...spendWith(spend.statement, spend.values)));
    },
    revokeAccessToken: async (jti, expiresAt) => {
      await sql.count(
        'INSERT INTO oidc_revoked_access_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING',
        [jti, expiresAt],
      );
    },
    isAccessTokenRevoked: async (jti) =>
      (await sql.rows('SELECT 1 FROM oidc_revoked_access_tokens WHERE jti = $1', [jti])).length > 0,
    recordApproval: async (identityId, clientId, approval, at) => {
      await sql.count(
        `INSERT INTO oidc_approvals (identity_id, client_id, scope, resources, approved_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (identity_id, client_id) DO UPDATE SET scope = excluded.scope, resources = excluded.resources, approved_at = excluded.approved_at`,
        [identityId, clientId, approval.scopes.join(' '), JSON.stringify(approval.resources), at],
      );
    },
    approval: async (identityId, clientId) => {
      const [row] = await sql.rows<ApprovalRow>(
        'SELECT scope, resources FROM oidc_approvals WHERE identity_id = $1 AND client_id = $2',
        [identityId, clientId],
      );
      return row ? approvalFromRow(row) : null;
    },
    approvedClients: async (identityId) =>
      (
        await sql.rows<{ client_id: string }>(
          'SELECT client_id FROM oidc_approvals WHERE identity_id = $1 ORDER BY client_id',
          [identityId],
        )
      ).map((row) => row.client_id),
    removeApproval: async (identityId, clientId) =>
      (await sql.count('DELETE FROM oidc_approvals WHERE identity_id = $1 AND client_id = $2', [
        identityId,
        clientId,
      ])) > 0,
    revokeGrantsOf: (identityId, at) =>
      sql.count('UPDATE oidc_grants SET revoked_at = $2 WHERE identity_id = $1 AND revoked_at IS NULL', [
        identityId,
        at,
      ]),
    forgetIdentity: async (identityId) => {
      await sql.atomic(async (tx) => {
        await tx.count('DELETE FROM oidc_codes WHERE identity_id = $1', [identityId]);
        // Refresh tokens go with their grant (ON DELETE CASCADE).
        await tx.count('DELETE FROM oidc_grants WHERE identity_id = $1', [identityId]);
        await tx.count('DELETE FROM oidc_approvals WHERE identity_id = $1', [identityId]);
      });
    },
    purgeExpired: async (before) => {
      let removed = await sql.count(
        'DELETE FROM oidc_codes WHERE expires_at < $1 AND (consumed_at IS NULL OR grant_id IS NULL)',
        [before],
      );
      removed += await sql.count('DELETE FROM oidc_refresh_tokens WHERE idle_expires_at < $1', [before]);
      removed += await sql.count('DELETE FROM oidc_revoked_access_tokens WHERE expires_at < $1', [before]);
      return removed;
    },
  };
}

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
