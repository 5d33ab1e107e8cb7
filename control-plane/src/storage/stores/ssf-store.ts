import type { SsfEvent, SsfStore, StoredSsfStream } from '../interface.js';
import { backlogOf, changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface StreamRow {
  stream_id: string;
  client_id: string;
  delivery: StoredSsfStream['delivery'];
  endpoint_url: string | null;
  authorization_sealed: Buffer | null;
  events_requested: string;
  description: string | null;
  status: StoredSsfStream['status'];
  status_reason: string | null;
  created_at: number;
  updated_at: number;
}

const streamToRow = (s: StoredSsfStream): StreamRow => ({
  stream_id: s.streamId,
  client_id: s.clientId,
  delivery: s.delivery,
  endpoint_url: s.endpointUrl,
  authorization_sealed: s.authorizationSealed,
  events_requested: JSON.stringify(s.eventsRequested),
  description: s.description,
  status: s.status,
  status_reason: s.statusReason,
  created_at: s.createdAt,
  updated_at: s.updatedAt,
});

const streamFromRow = (row: StreamRow): StoredSsfStream => ({
  streamId: row.stream_id,
  clientId: row.client_id,
  delivery: row.delivery,
  endpointUrl: row.endpoint_url,
  authorizationSealed: row.authorization_sealed === null ? null : Buffer.from(row.authorization_sealed),
  eventsRequested: JSON.parse(row.events_requested) as string[],
  description: row.description,
  status: row.status,
  statusReason: row.status_reason,
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

interface EventRow {
  event_id: string;
  stream_id: string;
  delivery: SsfEvent['delivery'];
  set_jwt: string;
  created_at: number;
  attempts: number;
  next_attempt_at: number;
  state: SsfEvent['state'];
  last_error: string | null;
  finished_at: number | null;
}

const eventFromRow = (row: EventRow): SsfEvent => ({
  eventId: row.event_id,
  streamId: row.stream_id,
  delivery: row.delivery,
  set: row.set_jwt,
  createdAt: Number(row.created_at),
  attempts: Number(row.attempts),
  nextAttemptAt: Number(row.next_attempt_at),
  state: row.state,
  lastError: row.last_error,
  finishedAt: row.finished_at === null ? null : Number(row.finished_at),
});

const STREAM_COLUMNS = `stream_id, client_id, delivery, endpoint_url, authorization_sealed, events_requested,
  description, status, status_reason, created_at, updated_at`;
const EVENT_COLUMNS = `event_id, stream_id, delivery, set_jwt, created_at, attempts, next_attempt_at, state,
  last_error, finished_at`;

/** `scope` (space-separated) names `email`. */
const NAMES_EMAIL = `(' ' || scope || ' ') LIKE '% email %'`;
/**
 * A revoked grant still lets its receiver hear of the account only when it ended with the event
 * itself (a session revoked, an account disabled: written in one transaction, a clock read apart):
 * never of what the account does after it took the grant back.
 */
const REVOKED_BY_THE_EVENT_MS = 5000;

export function ssfStore(sql: Sql): SsfStore {
  const { dialect } = sql;
  // SKIP LOCKED: a row another replica is claiming right now is left to it, never leased twice.
  const CLAIM_DUE = `UPDATE ssf_events SET lease_holder = $2, lease_until = $3
    WHERE event_id IN (
      SELECT event_id FROM ssf_events
      WHERE state = 'pending' AND delivery = 'push' AND next_attempt_at <= $1
        AND (lease_until IS NULL OR lease_until <= $1)
      ORDER BY next_attempt_at LIMIT $4
      ${dialect.forUpdateSkipLocked})
    RETURNING ${EVENT_COLUMNS}`;
  return {
    insertStream: async (stream) => {
      await sql.count(...insertOf('ssf_streams', streamToRow(stream)));
    },
    getStream: (streamId) =>
      firstRow(sql, `SELECT ${STREAM_COLUMNS} FROM ssf_streams WHERE stream_id = $1`, [streamId], streamFromRow),
    listStreams: async (clientId) =>
      (
        await sql.rows<StreamRow>(
          `SELECT ${STREAM_COLUMNS} FROM ssf_streams WHERE client_id = $1 ORDER BY created_at, stream_id`,
          [clientId],
        )
      ).map(streamFromRow),
    listPage: async ({ after, limit }) =>
      (
        await sql.rows<StreamRow>(
          `SELECT ${STREAM_COLUMNS} FROM ssf_streams WHERE stream_id > $1 ORDER BY stream_id LIMIT $2`,
          [after ?? '', limit],
        )
      ).map(streamFromRow),
    counts: async (streamIds) => {
      const rows = await sql.rows<{
        stream_id: string;
        subjects: number | string;
        pending: number | string;
        delivered: number | string;
        dead: number | string;
      }>(
        `SELECT s.stream_id,
           (SELECT count(*) FROM ssf_subjects j WHERE j.stream_id = s.stream_id) AS subjects,
           (SELECT count(*) FROM ssf_events e WHERE e.stream_id = s.stream_id AND e.state = 'pending') AS pending,
           (SELECT count(*) FROM ssf_events e WHERE e.stream_id = s.stream_id AND e.state = 'delivered') AS delivered,
           (SELECT count(*) FROM ssf_events e WHERE e.stream_id = s.stream_id AND e.state = 'dead') AS dead
         FROM ssf_streams s WHERE ${dialect.inList('s.stream_id', '$1')}`,
        [dialect.list(streamIds)],
      );
      return new Map(
        rows.map((r) => [
          r.stream_id,
          {
            subjects: Number(r.subjects),
            pending: Number(r.pending),
            delivered: Number(r.delivered),
            dead: Number(r.dead),
          },
        ]),
      );
    },
    listEnabled: async () =>
      (await sql.rows<StreamRow>(`SELECT ${STREAM_COLUMNS} FROM ssf_streams WHERE status = 'enabled'`)).map(
        streamFromRow,
      ),
    updateStream: async (s) => {
      await sql.count(
        `UPDATE ssf_streams SET endpoint_url = $2, authorization_sealed = $3, events_requested = $4, description = $5,
           status = $6, status_reason = $7, updated_at = $8 WHERE stream_id = $1`,
        [
          s.streamId,
          s.endpointUrl,
          s.authorizationSealed,
          JSON.stringify(s.eventsRequested),
          s.description,
          s.status,
          s.statusReason,
          s.updatedAt,
        ],
      );
    },
    removeStream: async (streamId) => {
      await sql.count('DELETE FROM ssf_subjects WHERE stream_id = $1', [streamId]);
      await sql.count('DELETE FROM ssf_events WHERE stream_id = $1', [streamId]);
      return changedOne(sql, 'DELETE FROM ssf_streams WHERE stream_id = $1', [streamId]);
    },
    mayBeSubject: async (identityId, clientId, at) => {
      const row = await sql.row<{ known: number | string }>(
        `SELECT CASE WHEN
           EXISTS (SELECT 1 FROM oidc_grants WHERE identity_id = $1 AND client_id = $2
                   AND revoked_at IS NULL AND expires_at > $3)
           OR EXISTS (SELECT 1 FROM oidc_approvals WHERE identity_id = $1 AND client_id = $2)
           OR EXISTS (SELECT 1 FROM identities i JOIN oidc_clients c ON c.owner_id = i.managed_by
                      WHERE i.identity_id = $1 AND c.client_id = $2)
         THEN 1 ELSE 0 END AS known`,
        [identityId, clientId, at],
      );
      return Number(row?.known ?? 0) === 1;
    },
    addSubject: async (streamId, identityId, at) => {
      await sql.count(
        ...insertOf(
          'ssf_subjects',
          { stream_id: streamId, identity_id: identityId, added_at: at },
          'ON CONFLICT (stream_id, identity_id) DO NOTHING',
        ),
      );
    },
    forgetSubject: async (identityId) => {
      await sql.count('DELETE FROM ssf_subjects WHERE identity_id = $1', [identityId]);
    },
    removeSubject: async (streamId, identityId) => {
      await sql.count('DELETE FROM ssf_subjects WHERE stream_id = $1 AND identity_id = $2', [streamId, identityId]);
    },
    subjectStreams: async (identityId, at) => {
      const rows = await sql.rows<StreamRow & { email: number | string }>(
        `SELECT ${STREAM_COLUMNS.replace(/(\w+)/g, 's.$1')},
           CASE WHEN EXISTS (SELECT 1 FROM oidc_grants g WHERE g.identity_id = $1 AND g.client_id = s.client_id
                             AND g.expires_at > $2 AND ${NAMES_EMAIL.replace('scope', 'g.scope')})
             OR EXISTS (SELECT 1 FROM oidc_approvals a WHERE a.identity_id = $1 AND a.client_id = s.client_id
                        AND ${NAMES_EMAIL.replace('scope', 'a.scope')})
           THEN 1 ELSE 0 END AS email
         FROM ssf_subjects j JOIN ssf_streams s ON s.stream_id = j.stream_id
         WHERE j.identity_id = $1 AND s.status = 'enabled'
           AND EXISTS (SELECT 1 FROM oidc_clients c WHERE c.client_id = s.client_id) AND (
           EXISTS (SELECT 1 FROM oidc_grants g WHERE g.identity_id = $1 AND g.client_id = s.client_id
                   AND g.expires_at > $2 AND (g.revoked_at IS NULL OR g.revoked_at >= $2 - ${REVOKED_BY_THE_EVENT_MS}))
           OR EXISTS (SELECT 1 FROM oidc_approvals a WHERE a.identity_id = $1 AND a.client_id = s.client_id)
           OR EXISTS (SELECT 1 FROM identities i JOIN oidc_clients c ON c.owner_id = i.managed_by
                      WHERE i.identity_id = $1 AND c.client_id = s.client_id))
         ORDER BY s.stream_id`,
        [identityId, at],
      );
      return rows.map((row) => ({ stream: streamFromRow(row), email: Number(row.email) === 1 }));
    },
    enqueue: async (event) => {
      await sql.count(
        ...insertOf('ssf_events', {
          event_id: event.eventId,
          stream_id: event.streamId,
          delivery: event.delivery,
          set_jwt: event.set,
          created_at: event.createdAt,
          attempts: event.attempts,
          next_attempt_at: event.nextAttemptAt,
          state: event.state,
          last_error: event.lastError,
          finished_at: event.finishedAt,
        }),
      );
    },
    claimDue: async (now, holder, leaseUntil, limit) =>
      (await sql.rows<EventRow>(CLAIM_DUE, [now, holder, leaseUntil, limit]))
        .map(eventFromRow)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt),
    finish: (eventId, holder, u) =>
      changedOne(
        sql,
        `UPDATE ssf_events SET state = $3, attempts = $4, next_attempt_at = $5, last_error = $6, finished_at = $7,
           lease_holder = NULL, lease_until = NULL
         WHERE event_id = $1 AND lease_holder = $2 AND state = 'pending'`,
        [eventId, holder, u.state, u.attempts, u.nextAttemptAt, u.lastError, u.finishedAt],
      ),
    pollable: async (streamId, limit) => {
      const rows = await sql.rows<EventRow>(
        `SELECT ${EVENT_COLUMNS} FROM ssf_events WHERE stream_id = $1 AND delivery = 'poll' AND state = 'pending'
         ORDER BY created_at, event_id LIMIT $2`,
        [streamId, limit + 1],
      );
      return { events: rows.slice(0, limit).map(eventFromRow), more: rows.length > limit };
    },
    acknowledge: async (streamId, eventIds, at) => {
      for (const eventId of eventIds)
        await sql.count(
          `UPDATE ssf_events SET state = 'delivered', finished_at = $3
           WHERE stream_id = $1 AND event_id = $2 AND delivery = 'poll' AND state = 'pending'`,
          [streamId, eventId, at],
        );
    },
    backlog: async () => {
      const row = await sql.row<{ pending: number | string; oldest: number | string | null }>(
        "SELECT COUNT(*) AS pending, MIN(created_at) AS oldest FROM ssf_events WHERE state = 'pending' AND delivery = 'push'",
      );
      return backlogOf(row);
    },
    purge: async (before, staleBefore) =>
      (await sql.count("DELETE FROM ssf_events WHERE state <> 'pending' AND finished_at < $1", [before])) +
      (await sql.count("DELETE FROM ssf_events WHERE delivery = 'poll' AND state = 'pending' AND created_at < $1", [
        staleBefore,
      ])),
  };
}
