import type { BackchannelLogout, LogoutStore } from '../interface.js';
import { backlogOf, changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface BackchannelLogoutRow {
  logout_id: string;
  client_id: string;
  identity_id: string;
  session_id: string;
  jti: string;
  created_at: number;
  attempts: number;
  next_attempt_at: number;
  state: BackchannelLogout['state'];
  last_error: string | null;
  finished_at: number | null;
}

const logoutToRow = (l: BackchannelLogout): BackchannelLogoutRow => ({
  logout_id: l.logoutId,
  client_id: l.clientId,
  identity_id: l.identityId,
  session_id: l.sessionId,
  jti: l.jti,
  created_at: l.createdAt,
  attempts: l.attempts,
  next_attempt_at: l.nextAttemptAt,
  state: l.state,
  last_error: l.lastError,
  finished_at: l.finishedAt,
});

const logoutFromRow = (row: BackchannelLogoutRow): BackchannelLogout => ({
  logoutId: row.logout_id,
  clientId: row.client_id,
  identityId: row.identity_id,
  sessionId: row.session_id,
  jti: row.jti,
  createdAt: row.created_at,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at,
  state: row.state,
  lastError: row.last_error,
  finishedAt: row.finished_at,
});

interface ParticipantRow {
  session_id: string;
  client_id: string;
  identity_id: string;
}

export function logoutStore(sql: Sql): LogoutStore {
  const { dialect } = sql;
  // A grant is the mark of a client that got tokens in the session; FedCM leaves a participant row.
  const PARTICIPANTS = `SELECT session_id, client_id, identity_id FROM oidc_grants WHERE ${dialect.inList('session_id', '$1')}
    UNION
    SELECT session_id, client_id, identity_id FROM session_participants WHERE ${dialect.inList('session_id', '$1')}
    ORDER BY session_id, client_id`;
  // SKIP LOCKED: a row another replica is claiming right now is left to it, never leased twice.
  const CLAIM_DUE = `UPDATE backchannel_logouts SET lease_holder = $2, lease_until = $3
    WHERE logout_id IN (
      SELECT logout_id FROM backchannel_logouts
      WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
      ORDER BY next_attempt_at LIMIT $4
      ${dialect.forUpdateSkipLocked})
    RETURNING *`;
  return {
    recordParticipant: async (participant, at) => {
      await sql.count(
        'INSERT INTO session_participants (session_id, client_id, identity_id, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (session_id, client_id) DO NOTHING',
        [participant.sessionId, participant.clientId, participant.identityId, at],
      );
    },
    participants: async (sessionIds) => {
      const ids = [...new Set(sessionIds)];
      if (ids.length === 0) return [];
      const rows = await sql.rows<ParticipantRow>(PARTICIPANTS, [dialect.list(ids)]);
      return rows.map((row) => ({ sessionId: row.session_id, clientId: row.client_id, identityId: row.identity_id }));
    },
    enqueue: (logout) =>
      changedOne(
        sql,
        ...insertOf('backchannel_logouts', logoutToRow(logout), 'ON CONFLICT (session_id, client_id) DO NOTHING'),
      ),
    claimDue: async (now, holder, leaseUntil, limit) => {
      const rows = await sql.rows<BackchannelLogoutRow>(CLAIM_DUE, [now, holder, leaseUntil, limit]);
      return rows.map(logoutFromRow).sort((a, b) => a.nextAttemptAt - b.nextAttemptAt);
    },
    finish: (logoutId, holder, attempt) =>
      changedOne(
        sql,
        `UPDATE backchannel_logouts SET state = $3, attempts = $4, next_attempt_at = $5, last_error = $6, finished_at = $7,
           lease_holder = NULL, lease_until = NULL
         WHERE logout_id = $1 AND lease_holder = $2`,
        [
          logoutId,
          holder,
          attempt.state,
          attempt.attempts,
          attempt.nextAttemptAt,
          attempt.lastError,
          attempt.finishedAt,
        ],
      ),
    get: (logoutId) =>
      firstRow(sql, 'SELECT * FROM backchannel_logouts WHERE logout_id = $1', [logoutId], logoutFromRow),
    backlog: async () => {
      const row = await sql.row<{ pending: number | string; oldest: number | string | null }>(
        "SELECT COUNT(*) AS pending, MIN(created_at) AS oldest FROM backchannel_logouts WHERE state = 'pending'",
      );
      return backlogOf(row);
    },
    listForSession: async (sessionId) =>
      (
        await sql.rows<BackchannelLogoutRow>(
          'SELECT * FROM backchannel_logouts WHERE session_id = $1 ORDER BY created_at, logout_id',
          [sessionId],
        )
      ).map(logoutFromRow),
    purge: async (finishedBefore, participantsBefore) =>
      (await sql.count("DELETE FROM backchannel_logouts WHERE state <> 'pending' AND finished_at < $1", [
        finishedBefore,
      ])) + (await sql.count('DELETE FROM session_participants WHERE created_at < $1', [participantsBefore])),
  };
}
