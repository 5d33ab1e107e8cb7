import type { SessionAssurance, SessionStore, StoredSession } from '../interface.js';
import { changedOne, columnOf, firstRow, insertOf, type Sql } from '../sql.js';

interface SessionRow {
  session_id: string;
  token_hash: string;
  identity_id: string;
  device_id: string;
  assurance: string;
  amr: string;
  auth_time: number;
  step_up_at: number | null;
  cred_id: string | null;
  created_at: number;
  last_seen_at: number;
  idle_expires_at: number;
  absolute_expires_at: number;
  revoked_at: number | null;
}

const sessionToRow = (s: StoredSession): SessionRow => ({
  session_id: s.sessionId,
  token_hash: s.tokenHash,
  identity_id: s.identityId,
  device_id: s.deviceId,
  assurance: s.assurance,
  amr: JSON.stringify(s.amr),
  auth_time: s.authTime,
  step_up_at: s.stepUpAt,
  cred_id: s.credId,
  created_at: s.createdAt,
  last_seen_at: s.lastSeenAt,
  idle_expires_at: s.idleExpiresAt,
  absolute_expires_at: s.absoluteExpiresAt,
  revoked_at: s.revokedAt,
});

const sessionFromRow = (row: SessionRow): StoredSession => ({
  sessionId: row.session_id,
  tokenHash: row.token_hash,
  identityId: row.identity_id,
  deviceId: row.device_id,
  assurance: row.assurance as SessionAssurance,
  amr: JSON.parse(row.amr) as string[],
  authTime: row.auth_time,
  stepUpAt: row.step_up_at,
  credId: row.cred_id,
  createdAt: row.created_at,
  lastSeenAt: row.last_seen_at,
  idleExpiresAt: row.idle_expires_at,
  absoluteExpiresAt: row.absolute_expires_at,
  revokedAt: row.revoked_at,
});

/** A session row live at the time in parameter `now` ('$2'). */
export const liveAt = (now: string) =>
  `revoked_at IS NULL AND idle_expires_at > ${now} AND absolute_expires_at > ${now}`;

const LIVE = liveAt('$2');

export function sessionStore(sql: Sql): SessionStore {
  // The idle expiry never outgrows the absolute one.
  const TOUCH = `UPDATE sessions SET last_seen_at = $2, idle_expires_at = ${sql.dialect.least('$3', 'absolute_expires_at')}
    WHERE session_id = $1 AND revoked_at IS NULL`;
  return {
    insert: async (session) => {
      await sql.count(...insertOf('sessions', sessionToRow(session)));
    },
    findLive: (tokenHash, now) =>
      firstRow(sql, `SELECT * FROM sessions WHERE token_hash = $1 AND ${LIVE}`, [tokenHash, now], sessionFromRow),
    listLive: async (identityId, now) =>
      (
        await sql.rows<SessionRow>(
          `SELECT * FROM sessions WHERE identity_id = $1 AND ${LIVE} ORDER BY created_at, session_id`,
          [identityId, now],
        )
      ).map(sessionFromRow),
    isLive: async (sessionId, now) =>
      (await sql.rows(`SELECT 1 FROM sessions WHERE session_id = $1 AND ${LIVE}`, [sessionId, now])).length > 0,
    touch: async (sessionId, at, idleExpiresAt) => {
      await sql.count(TOUCH, [sessionId, at, idleExpiresAt]);
    },
    renewToken: (sessionId, presentedTokenHash, renewal, now) =>
      changedOne(
        sql,
        `UPDATE sessions SET token_hash = $4, assurance = $5, amr = $6, auth_time = $7, step_up_at = $8, cred_id = $9,
           last_seen_at = $10, idle_expires_at = $11, absolute_expires_at = $12
         WHERE session_id = $1 AND token_hash = $3 AND ${LIVE}`,
        [
          sessionId,
          now,
          presentedTokenHash,
          renewal.tokenHash,
          renewal.assurance,
          JSON.stringify(renewal.amr),
          renewal.authTime,
          renewal.stepUpAt,
          renewal.credId,
          renewal.lastSeenAt,
          renewal.idleExpiresAt,
          renewal.absoluteExpiresAt,
        ],
      ),
    revoke: (identityId, sessionId, at) =>
      changedOne(sql, `UPDATE sessions SET revoked_at = $2 WHERE identity_id = $1 AND session_id = $3 AND ${LIVE}`, [
        identityId,
        at,
        sessionId,
      ]),
    revokeAll: (identityId, at) =>
      sql.count(`UPDATE sessions SET revoked_at = $2 WHERE identity_id = $1 AND ${LIVE}`, [identityId, at]),
    capExpiry: async (sessionId, notAfter) => {
      await sql.count(
        `UPDATE sessions SET absolute_expires_at = ${sql.dialect.least('$2', 'absolute_expires_at')},
           idle_expires_at = ${sql.dialect.least('$2', 'idle_expires_at')}
         WHERE session_id = $1 AND revoked_at IS NULL`,
        [sessionId, notAfter],
      );
    },
    revokeDevice: (identityId, deviceId, at) =>
      sql.count(`UPDATE sessions SET revoked_at = $2 WHERE identity_id = $1 AND device_id = $3 AND ${LIVE}`, [
        identityId,
        at,
        deviceId,
      ]),
    listRevokedForClient: (clientId, since, limit) =>
      columnOf<string>(
        sql,
        `SELECT s.session_id AS id FROM sessions s
         WHERE s.revoked_at >= $2 AND EXISTS (SELECT 1 FROM oidc_grants g WHERE g.session_id = s.session_id AND g.client_id = $1)
         ORDER BY s.revoked_at DESC, s.session_id LIMIT $3`,
        [clientId, since, limit],
        'id',
      ),
  };
}
