import type { SessionStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { sessionFromRow as fromRow, type SessionRow } from '../rows.js';

const LIVE = 'revoked_at IS NULL AND idle_expires_at > @now AND absolute_expires_at > @now';

export function sqliteSessionStore(runner: Runner): SessionStore {
  return {
    insert: (session) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO sessions (session_id, token_hash, identity_id, device_id, assurance, amr, auth_time, step_up_at, cred_id,
             created_at, last_seen_at, idle_expires_at, absolute_expires_at, revoked_at)
           VALUES (@session_id, @token_hash, @identity_id, @device_id, @assurance, @amr, @auth_time, @step_up_at, @cred_id,
             @created_at, @last_seen_at, @idle_expires_at, @absolute_expires_at, @revoked_at)`,
        ).run({
          session_id: session.sessionId,
          token_hash: session.tokenHash,
          identity_id: session.identityId,
          device_id: session.deviceId,
          assurance: session.assurance,
          amr: JSON.stringify(session.amr),
          auth_time: session.authTime,
          step_up_at: session.stepUpAt,
          cred_id: session.credId,
          created_at: session.createdAt,
          last_seen_at: session.lastSeenAt,
          idle_expires_at: session.idleExpiresAt,
          absolute_expires_at: session.absoluteExpiresAt,
          revoked_at: session.revokedAt,
        });
      }),
    findLive: (tokenHash, now) =>
      runner.run((db) => {
        const row = cached(db, `SELECT * FROM sessions WHERE token_hash = @hash AND ${LIVE}`).get({
          hash: tokenHash,
          now,
        }) as SessionRow | undefined;
        return row ? fromRow(row) : null;
      }),
    listLive: (identityId, now) =>
      runner.run((db) =>
        (
          cached(
            db,
            `SELECT * FROM sessions WHERE identity_id = @identityId AND ${LIVE} ORDER BY created_at, session_id`,
          ).all({ identityId, now }) as SessionRow[]
        ).map(fromRow),
      ),
    isLive: (sessionId, now) =>
      runner.run(
        (db) =>
          cached(db, `SELECT 1 AS live FROM sessions WHERE session_id = @sessionId AND ${LIVE}`).get({
            sessionId,
            now,
          }) !== undefined,
      ),
    touch: (sessionId, at, idleExpiresAt) =>
      runner.run((db) => {
        // The idle expiry never outgrows the absolute one.
        cached(
          db,
          'UPDATE sessions SET last_seen_at = ?, idle_expires_at = MIN(?, absolute_expires_at) WHERE session_id = ? AND revoked_at IS NULL',
        ).run(at, idleExpiresAt, sessionId);
      }),
    renewToken: (sessionId, presentedTokenHash, renewal, now) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE sessions SET token_hash = @token_hash, assurance = @assurance, amr = @amr, auth_time = @auth_time,
               step_up_at = @step_up_at, cred_id = @cred_id, last_seen_at = @last_seen_at,
               idle_expires_at = @idle_expires_at, absolute_expires_at = @absolute_expires_at
             WHERE session_id = @sessionId AND token_hash = @presented AND ${LIVE}`,
          ).run({
            sessionId,
            presented: presentedTokenHash,
            now,
            token_hash: renewal.tokenHash,
            assurance: renewal.assurance,
            amr: JSON.stringify(renewal.amr),
            auth_time: renewal.authTime,
            step_up_at: renewal.stepUpAt,
            cred_id: renewal.credId,
            last_seen_at: renewal.lastSeenAt,
            idle_expires_at: renewal.idleExpiresAt,
            absolute_expires_at: renewal.absoluteExpiresAt,
          }).changes === 1,
      ),
    revoke: (identityId, sessionId, at) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE sessions SET revoked_at = @at WHERE identity_id = @identityId AND session_id = @sessionId AND ${LIVE}`,
          ).run({ at, identityId, sessionId, now: at }).changes === 1,
      ),
    revokeAll: (identityId, at) =>
      runner.run(
        (db) =>
          cached(db, `UPDATE sessions SET revoked_at = @at WHERE identity_id = @identityId AND ${LIVE}`).run({
            at,
            identityId,
            now: at,
          }).changes,
      ),
    revokeDevice: (identityId, deviceId, at) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE sessions SET revoked_at = @at WHERE identity_id = @identityId AND device_id = @deviceId AND ${LIVE}`,
          ).run({ at, identityId, deviceId, now: at }).changes,
      ),
    listRevokedForClient: (clientId, since, limit) =>
      runner.run((db) =>
        (
          cached(
            db,
            `SELECT s.session_id AS id FROM sessions s
             WHERE s.revoked_at >= @since AND EXISTS (SELECT 1 FROM oidc_grants g WHERE g.session_id = s.session_id AND g.client_id = @clientId)
             ORDER BY s.revoked_at DESC, s.session_id LIMIT @limit`,
          ).all({ clientId, since, limit }) as Array<{ id: string }>
        ).map((row) => row.id),
      ),
  };
}
