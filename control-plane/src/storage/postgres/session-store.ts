import { sessionFromRow, sessionToRow, type SessionRow } from '../rows.js';
import type { SessionStore } from '../types.js';
import { insertOf, type Sql } from './sql.js';

/** A session row live at the time in parameter `now` ('$2'). */
export const liveAt = (now: string) =>
  `revoked_at IS NULL AND idle_expires_at > ${now} AND absolute_expires_at > ${now}`;

const LIVE = liveAt('$2');

export function postgresSessionStore(sql: Sql): SessionStore {
  return {
    insert: async (session) => {
      await sql.count(...insertOf('sessions', sessionToRow(session)));
    },
    findLive: async (tokenHash, now) => {
      const [row] = await sql.rows<SessionRow>(`SELECT * FROM sessions WHERE token_hash = $1 AND ${LIVE}`, [
        tokenHash,
        now,
      ]);
      return row ? sessionFromRow(row) : null;
    },
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
      // The idle expiry never outgrows the absolute one.
      await sql.count(
        'UPDATE sessions SET last_seen_at = $2, idle_expires_at = LEAST($3, absolute_expires_at) WHERE session_id = $1 AND revoked_at IS NULL',
        [sessionId, at, idleExpiresAt],
      );
    },
    renewToken: async (sessionId, presentedTokenHash, renewal, now) =>
      (await sql.count(
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
      )) === 1,
    revoke: async (identityId, sessionId, at) =>
      (await sql.count(`UPDATE sessions SET revoked_at = $2 WHERE identity_id = $1 AND session_id = $3 AND ${LIVE}`, [
        identityId,
        at,
        sessionId,
      ])) === 1,
    revokeAll: (identityId, at) =>
      sql.count(`UPDATE sessions SET revoked_at = $2 WHERE identity_id = $1 AND ${LIVE}`, [identityId, at]),
    revokeDevice: (identityId, deviceId, at) =>
      sql.count(`UPDATE sessions SET revoked_at = $2 WHERE identity_id = $1 AND device_id = $3 AND ${LIVE}`, [
        identityId,
        at,
        deviceId,
      ]),
    listRevokedForClient: async (clientId, since, limit) =>
      (
        await sql.rows<{ id: string }>(
          `SELECT s.session_id AS id FROM sessions s
         WHERE s.revoked_at >= $2 AND EXISTS (SELECT 1 FROM oidc_grants g WHERE g.session_id = s.session_id AND g.client_id = $1)
         ORDER BY s.revoked_at DESC, s.session_id LIMIT $3`,
          [clientId, since, limit],
        )
      ).map((row) => row.id),
  };
}
