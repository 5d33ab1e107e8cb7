import { logoutFromRow, logoutToRow, type BackchannelLogoutRow } from '../rows.js';
import type { LogoutStore, SessionParticipant } from '../types.js';
import { cached, type Runner } from './serial-runner.js';

interface ParticipantRow {
  session_id: string;
  client_id: string;
  identity_id: string;
}

const participantFromRow = (row: ParticipantRow): SessionParticipant => ({
  sessionId: row.session_id,
  clientId: row.client_id,
  identityId: row.identity_id,
});

export function sqliteLogoutStore(runner: Runner): LogoutStore {
  return {
    recordParticipant: (participant, at) =>
      runner.run((db) => {
        cached(
          db,
          'INSERT INTO session_participants (session_id, client_id, identity_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (session_id, client_id) DO NOTHING',
        ).run(participant.sessionId, participant.clientId, participant.identityId, at);
      }),
    participants: (sessionIds) =>
      runner.run((db) => {
        const ids = JSON.stringify([...new Set(sessionIds)]);
        // A grant is the mark of a client that got tokens in the session; FedCM leaves a participant row.
        const rows = cached(
          db,
          `SELECT session_id, client_id, identity_id FROM oidc_grants WHERE session_id IN (SELECT value FROM json_each(?))
           UNION
           SELECT session_id, client_id, identity_id FROM session_participants WHERE session_id IN (SELECT value FROM json_each(?))
           ORDER BY session_id, client_id`,
        ).all(ids, ids) as ParticipantRow[];
        return rows.map(participantFromRow);
      }),
    enqueue: (logout) =>
      runner.run((db) => {
        const row = logoutToRow(logout);
        return (
          cached(
            db,
            `INSERT INTO backchannel_logouts (logout_id, client_id, identity_id, session_id, jti, created_at, attempts, next_attempt_at, state, last_error, finished_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, client_id) DO NOTHING`,
          ).run(
            row.logout_id,
            row.client_id,
            row.identity_id,
            row.session_id,
            row.jti,
            row.created_at,
            row.attempts,
            row.next_attempt_at,
            row.state,
            row.last_error,
            row.finished_at,
          ).changes === 1
        );
      }),
    claimDue: (now, holder, leaseUntil, limit) =>
      runner.run((db) => {
        // One statement: the sub-select and the lease land together, and SQLite runs one writer at a time.
        const rows = cached(
          db,
          `UPDATE backchannel_logouts SET lease_holder = ?, lease_until = ?
           WHERE logout_id IN (
             SELECT logout_id FROM backchannel_logouts
             WHERE state = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
             ORDER BY next_attempt_at LIMIT ?)
           RETURNING *`,
        ).all(holder, leaseUntil, now, now, limit) as BackchannelLogoutRow[];
        return rows.map(logoutFromRow).sort((a, b) => a.nextAttemptAt - b.nextAttemptAt);
      }),
    finish: (logoutId, holder, attempt) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE backchannel_logouts SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ?, finished_at = ?,
               lease_holder = NULL, lease_until = NULL
             WHERE logout_id = ? AND lease_holder = ?`,
          ).run(
            attempt.state,
            attempt.attempts,
            attempt.nextAttemptAt,
            attempt.lastError,
            attempt.finishedAt,
            logoutId,
            holder,
          ).changes === 1,
      ),
    get: (logoutId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM backchannel_logouts WHERE logout_id = ?').get(logoutId) as
          BackchannelLogoutRow | undefined;
        return row ? logoutFromRow(row) : null;
      }),
    listForSession: (sessionId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM backchannel_logouts WHERE session_id = ? ORDER BY created_at, logout_id').all(
            sessionId,
          ) as BackchannelLogoutRow[]
        ).map(logoutFromRow),
      ),
    purge: (finishedBefore, participantsBefore) =>
      runner.run(
        (db) =>
          cached(db, "DELETE FROM backchannel_logouts WHERE state <> 'pending' AND finished_at < ?").run(finishedBefore)
            .changes +
          cached(db, 'DELETE FROM session_participants WHERE created_at < ?').run(participantsBefore).changes,
      ),
  };
}
