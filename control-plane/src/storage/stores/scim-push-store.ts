import type { ScimPushJob, ScimPushLink, ScimPushStore, StoredScimPushTarget } from '../interface.js';
import { backlogOf, changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface TargetRow {
  client_id: string;
  base_url: string;
  token_sealed: Buffer;
  created_at: number;
  updated_at: number;
  last_sync_at: number | null;
}

const targetFromRow = (row: TargetRow): StoredScimPushTarget => ({
  clientId: row.client_id,
  baseUrl: row.base_url,
  tokenSealed: Buffer.from(row.token_sealed),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
  lastSyncAt: row.last_sync_at === null ? null : Number(row.last_sync_at),
});

interface JobRow {
  client_id: string;
  resource: ScimPushJob['resource'];
  local_id: string;
  version: number;
  created_at: number;
  attempts: number;
  next_attempt_at: number;
  state: ScimPushJob['state'];
  last_status: number | null;
  last_error: string | null;
  finished_at: number | null;
}

const orNull = (value: number | string | null) => (value === null ? null : Number(value));

const jobFromRow = (row: JobRow): ScimPushJob => ({
  clientId: row.client_id,
  resource: row.resource,
  localId: row.local_id,
  version: Number(row.version),
  createdAt: Number(row.created_at),
  attempts: Number(row.attempts),
  nextAttemptAt: Number(row.next_attempt_at),
  state: row.state,
  lastStatus: orNull(row.last_status),
  lastError: row.last_error,
  finishedAt: orNull(row.finished_at),
});

interface LinkRow {
  client_id: string;
  resource: ScimPushLink['resource'];
  local_id: string;
  remote_id: string;
  active: number | string;
  updated_at: number;
}

const linkFromRow = (row: LinkRow): ScimPushLink => ({
  clientId: row.client_id,
  resource: row.resource,
  localId: row.local_id,
  remoteId: row.remote_id,
  active: Number(row.active) === 1,
  updatedAt: Number(row.updated_at),
});

const TARGET_COLUMNS = 'client_id, base_url, token_sealed, created_at, updated_at, last_sync_at';
const JOB_COLUMNS = `client_id, resource, local_id, version, created_at, attempts, next_attempt_at, state,
  last_status, last_error, finished_at`;
const LINK_COLUMNS = 'client_id, resource, local_id, remote_id, active, updated_at';
const JOB_KEY = 'client_id = $1 AND resource = $2 AND local_id = $3';

export function scimPushStore(sql: Sql): ScimPushStore {
  const { dialect } = sql;
  // A row queued again while pending keeps its place and its failures; a finished one starts afresh.
  const ENQUEUE = `INSERT INTO scim_push_jobs (client_id, resource, local_id, version, created_at, attempts,
      next_attempt_at, state) VALUES ($1, $2, $3, 1, $4, 0, $4, 'pending')
    ON CONFLICT (client_id, resource, local_id) DO UPDATE SET
      version = scim_push_jobs.version + 1,
      next_attempt_at = CASE WHEN scim_push_jobs.state = 'pending'
        THEN ${dialect.least('scim_push_jobs.next_attempt_at', 'excluded.next_attempt_at')}
        ELSE excluded.next_attempt_at END,
      created_at = CASE WHEN scim_push_jobs.state = 'pending' THEN scim_push_jobs.created_at ELSE excluded.created_at END,
      attempts = CASE WHEN scim_push_jobs.state = 'pending' THEN scim_push_jobs.attempts ELSE 0 END,
      state = 'pending', finished_at = NULL`;
  // SKIP LOCKED: a row another replica is claiming right now is left to it, never leased twice.
  const CLAIM_DUE = `UPDATE scim_push_jobs SET lease_holder = $2, lease_until = $3
    WHERE (client_id, resource, local_id) IN (
      SELECT client_id, resource, local_id FROM scim_push_jobs
      WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
      ORDER BY next_attempt_at LIMIT $4
      ${dialect.forUpdateSkipLocked})
    RETURNING ${JOB_COLUMNS}`;
  return {
    putTarget: async (target) => {
      await sql.count(
        ...insertOf(
          'scim_push_targets',
          {
            client_id: target.clientId,
            base_url: target.baseUrl,
            token_sealed: target.tokenSealed,
            created_at: target.createdAt,
            updated_at: target.updatedAt,
            last_sync_at: target.lastSyncAt,
          },
          `ON CONFLICT (client_id) DO UPDATE SET base_url = excluded.base_url, token_sealed = excluded.token_sealed,
             updated_at = excluded.updated_at`,
        ),
      );
    },
    target: (clientId) =>
      firstRow(sql, `SELECT ${TARGET_COLUMNS} FROM scim_push_targets WHERE client_id = $1`, [clientId], targetFromRow),
    targets: async () =>
      (await sql.rows<TargetRow>(`SELECT ${TARGET_COLUMNS} FROM scim_push_targets ORDER BY client_id`)).map(
        targetFromRow,
      ),
    removeTarget: async (clientId) => {
      await sql.count('DELETE FROM scim_push_jobs WHERE client_id = $1', [clientId]);
      await sql.count('DELETE FROM scim_push_links WHERE client_id = $1', [clientId]);
      return changedOne(sql, 'DELETE FROM scim_push_targets WHERE client_id = $1', [clientId]);
    },
    markSynced: async (clientId, at) => {
      await sql.count('UPDATE scim_push_targets SET last_sync_at = $2 WHERE client_id = $1', [clientId, at]);
    },
    enqueue: async (clientId, resource, localId, at) => {
      await sql.count(ENQUEUE, [clientId, resource, localId, at]);
    },
    claimDue: async (now, holder, leaseUntil, limit) =>
      (await sql.rows<JobRow>(CLAIM_DUE, [now, holder, leaseUntil, limit]))
        .map(jobFromRow)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt),
    finish: async (job, holder, u) => {
      const key = [job.clientId, job.resource, job.localId, holder];
      const finished = await changedOne(
        sql,
        `UPDATE scim_push_jobs SET state = $5, attempts = $6, next_attempt_at = $7, last_status = $8, last_error = $9,
           finished_at = $10, lease_holder = NULL, lease_until = NULL
         WHERE ${JOB_KEY} AND lease_holder = $4 AND version = $11`,
        [...key, u.state, u.attempts, u.nextAttemptAt, u.lastStatus, u.lastError, u.finishedAt, job.version],
      );
      if (finished) return 'finished';
      // Queued again during the attempt: it stays due, with what this attempt saw.
      const released = await changedOne(
        sql,
        `UPDATE scim_push_jobs SET lease_holder = NULL, lease_until = NULL, last_status = $5, last_error = $6
         WHERE ${JOB_KEY} AND lease_holder = $4`,
        [...key, u.lastStatus, u.lastError],
      );
      return released ? 'requeued' : 'lost';
    },
    unfinished: async (clientId) =>
      (
        await sql.rows<JobRow>(
          `SELECT ${JOB_COLUMNS} FROM scim_push_jobs WHERE client_id = $1 AND state <> 'delivered'
           ORDER BY created_at, resource, local_id`,
          [clientId],
        )
      ).map(jobFromRow),
    backlog: async () => {
      const row = await sql.row<{ pending: number | string; oldest: number | string | null }>(
        "SELECT COUNT(*) AS pending, MIN(created_at) AS oldest FROM scim_push_jobs WHERE state = 'pending' AND resource <> 'reconcile'",
      );
      return backlogOf(row);
    },
    // Rows of a client whose target is gone (queued as it was removed) go too.
    purge: (before) =>
      sql.count(
        `DELETE FROM scim_push_jobs WHERE (state = 'delivered' AND finished_at < $1)
           OR client_id NOT IN (SELECT client_id FROM scim_push_targets)`,
        [before],
      ),
    link: (clientId, resource, localId) =>
      firstRow(
        sql,
        `SELECT ${LINK_COLUMNS} FROM scim_push_links WHERE ${JOB_KEY}`,
        [clientId, resource, localId],
        linkFromRow,
      ),
    links: async (clientId, resource) =>
      (
        await sql.rows<LinkRow>(
          `SELECT ${LINK_COLUMNS} FROM scim_push_links WHERE client_id = $1 AND resource = $2 ORDER BY local_id`,
          [clientId, resource],
        )
      ).map(linkFromRow),
    putLink: async (link) => {
      await sql.count(
        ...insertOf(
          'scim_push_links',
          {
            client_id: link.clientId,
            resource: link.resource,
            local_id: link.localId,
            remote_id: link.remoteId,
            active: link.active ? 1 : 0,
            updated_at: link.updatedAt,
          },
          `ON CONFLICT (client_id, resource, local_id) DO UPDATE SET remote_id = excluded.remote_id,
             active = excluded.active, updated_at = excluded.updated_at`,
        ),
      );
    },
    removeLink: async (clientId, resource, localId) => {
      await sql.count(`DELETE FROM scim_push_links WHERE ${JOB_KEY}`, [clientId, resource, localId]);
    },
  };
}
