import type {
  StoredWebhook,
  WebhookAttempt,
  WebhookDelivery,
  WebhookDeliveryUpdate,
  WebhookStore,
} from '../interface.js';
import { backlogOf, changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface WebhookRow {
  webhook_id: string;
  org_id: string | null;
  url: string;
  events: string;
  description: string | null;
  secret_sealed: Buffer;
  previous_secret_sealed: Buffer | null;
  previous_secret_until: number | null;
  state: StoredWebhook['state'];
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

const webhookToRow = (w: StoredWebhook): WebhookRow => ({
  webhook_id: w.webhookId,
  org_id: w.orgId,
  url: w.url,
  events: JSON.stringify(w.events),
  description: w.description,
  secret_sealed: w.secretSealed,
  previous_secret_sealed: w.previousSecretSealed,
  previous_secret_until: w.previousSecretUntil,
  state: w.state,
  failing_since: w.failingSince,
  created_at: w.createdAt,
  updated_at: w.updatedAt,
});

const webhookFromRow = (row: WebhookRow): StoredWebhook => ({
  webhookId: row.webhook_id,
  orgId: row.org_id,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  description: row.description,
  secretSealed: Buffer.from(row.secret_sealed),
  previousSecretSealed: row.previous_secret_sealed === null ? null : Buffer.from(row.previous_secret_sealed),
  previousSecretUntil: row.previous_secret_until,
  state: row.state,
  failingSince: row.failing_since,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

interface DeliveryRow {
  delivery_id: string;
  webhook_id: string;
  receipt_hash: string;
  payload: string;
  created_at: number;
  attempts: number;
  next_attempt_at: number;
  state: WebhookDelivery['state'];
  last_status: number | null;
  last_error: string | null;
  finished_at: number | null;
}

const deliveryToRow = (d: WebhookDelivery): DeliveryRow => ({
  delivery_id: d.deliveryId,
  webhook_id: d.webhookId,
  receipt_hash: d.receiptHash,
  payload: d.payload,
  created_at: d.createdAt,
  attempts: d.attempts,
  next_attempt_at: d.nextAttemptAt,
  state: d.state,
  last_status: d.lastStatus,
  last_error: d.lastError,
  finished_at: d.finishedAt,
});

const deliveryFromRow = (row: DeliveryRow): WebhookDelivery => ({
  deliveryId: row.delivery_id,
  webhookId: row.webhook_id,
  receiptHash: row.receipt_hash,
  payload: row.payload,
  createdAt: Number(row.created_at),
  attempts: Number(row.attempts),
  nextAttemptAt: Number(row.next_attempt_at),
  state: row.state,
  lastStatus: row.last_status === null ? null : Number(row.last_status),
  lastError: row.last_error,
  finishedAt: row.finished_at === null ? null : Number(row.finished_at),
});

interface AttemptRow {
  delivery_id: string;
  webhook_id: string;
  attempt: number;
  at: number;
  status: number | null;
  error: string | null;
}

const attemptFromRow = (row: AttemptRow): WebhookAttempt => ({
  deliveryId: row.delivery_id,
  webhookId: row.webhook_id,
  attempt: Number(row.attempt),
  at: Number(row.at),
  status: row.status === null ? null : Number(row.status),
  error: row.error,
});

const COLUMNS = `webhook_id, org_id, url, events, description, secret_sealed, previous_secret_sealed,
  previous_secret_until, state, failing_since, created_at, updated_at`;

export function webhookStore(sql: Sql): WebhookStore {
  const { dialect } = sql;
  // SKIP LOCKED: a row another replica is claiming right now is left to it, never leased twice.
  const CLAIM_DUE = `UPDATE webhook_deliveries SET lease_holder = $2, lease_until = $3
    WHERE delivery_id IN (
      SELECT delivery_id FROM webhook_deliveries
      WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
      ORDER BY next_attempt_at LIMIT $4
      ${dialect.forUpdateSkipLocked})
    RETURNING delivery_id, webhook_id, receipt_hash, payload, created_at, attempts, next_attempt_at, state,
      last_status, last_error, finished_at`;
  return {
    insert: async (webhook) => {
      await sql.count(...insertOf('webhooks', webhookToRow(webhook)));
    },
    get: (webhookId) =>
      firstRow(sql, `SELECT ${COLUMNS} FROM webhooks WHERE webhook_id = $1`, [webhookId], webhookFromRow),
    list: async (orgId) =>
      (
        await sql.rows<WebhookRow>(
          orgId === null
            ? `SELECT ${COLUMNS} FROM webhooks WHERE org_id IS NULL ORDER BY created_at, webhook_id`
            : `SELECT ${COLUMNS} FROM webhooks WHERE org_id = $1 ORDER BY created_at, webhook_id`,
          orgId === null ? [] : [orgId],
        )
      ).map(webhookFromRow),
    listActive: async () =>
      (await sql.rows<WebhookRow>(`SELECT ${COLUMNS} FROM webhooks WHERE state = 'active'`)).map(webhookFromRow),
    update: async (w) => {
      await sql.count(
        `UPDATE webhooks SET url = $2, events = $3, description = $4, secret_sealed = $5, previous_secret_sealed = $6,
           previous_secret_until = $7, state = $8, failing_since = $9, updated_at = $10 WHERE webhook_id = $1`,
        [
          w.webhookId,
          w.url,
          JSON.stringify(w.events),
          w.description,
          w.secretSealed,
          w.previousSecretSealed,
          w.previousSecretUntil,
          w.state,
          w.failingSince,
          w.updatedAt,
        ],
      );
    },
    remove: async (webhookId) => {
      await sql.count('DELETE FROM webhook_attempts WHERE webhook_id = $1', [webhookId]);
      await sql.count('DELETE FROM webhook_deliveries WHERE webhook_id = $1', [webhookId]);
      return changedOne(sql, 'DELETE FROM webhooks WHERE webhook_id = $1', [webhookId]);
    },
    markFailing: async (webhookId, since) => {
      await sql.count(
        since === null
          ? 'UPDATE webhooks SET failing_since = NULL WHERE webhook_id = $1 AND failing_since IS NOT NULL'
          : 'UPDATE webhooks SET failing_since = $2 WHERE webhook_id = $1 AND failing_since IS NULL',
        since === null ? [webhookId] : [webhookId, since],
      );
    },
    disable: async (webhookId, at) => {
      if (
        !(await changedOne(
          sql,
          "UPDATE webhooks SET state = 'disabled', updated_at = $2 WHERE webhook_id = $1 AND state = 'active'",
          [webhookId, at],
        ))
      )
        return false;
      await sql.count(
        `UPDATE webhook_deliveries SET state = 'dead', finished_at = $2, last_error = 'webhook_disabled',
           lease_holder = NULL, lease_until = NULL
         WHERE webhook_id = $1 AND state = 'pending'`,
        [webhookId, at],
      );
      return true;
    },
    enqueue: async (delivery) => {
      await sql.count(...insertOf('webhook_deliveries', deliveryToRow(delivery)));
    },
    claimDue: async (now, holder, leaseUntil, limit) =>
      (await sql.rows<DeliveryRow>(CLAIM_DUE, [now, holder, leaseUntil, limit]))
        .map(deliveryFromRow)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt),
    finish: (deliveryId, holder, u: WebhookDeliveryUpdate) =>
      changedOne(
        sql,
        `UPDATE webhook_deliveries SET state = $3, attempts = $4, next_attempt_at = $5, last_status = $6, last_error = $7,
           finished_at = $8, lease_holder = NULL, lease_until = NULL
         WHERE delivery_id = $1 AND lease_holder = $2 AND state = 'pending'`,
        [deliveryId, holder, u.state, u.attempts, u.nextAttemptAt, u.lastStatus, u.lastError, u.finishedAt],
      ),
    recordAttempt: async (a) => {
      await sql.count(
        ...insertOf('webhook_attempts', {
          delivery_id: a.deliveryId,
          webhook_id: a.webhookId,
          attempt: a.attempt,
          at: a.at,
          status: a.status,
          error: a.error,
        }),
      );
    },
    attempts: async (webhookId, limit) =>
      (
        await sql.rows<AttemptRow>(
          'SELECT * FROM webhook_attempts WHERE webhook_id = $1 ORDER BY at DESC, attempt DESC LIMIT $2',
          [webhookId, limit],
        )
      ).map(attemptFromRow),
    getDelivery: (deliveryId) =>
      firstRow(
        sql,
        `SELECT delivery_id, webhook_id, receipt_hash, payload, created_at, attempts, next_attempt_at, state, last_status,
           last_error, finished_at FROM webhook_deliveries WHERE delivery_id = $1`,
        [deliveryId],
        deliveryFromRow,
      ),
    backlog: async () => {
      const row = await sql.row<{ pending: number | string; oldest: number | string | null }>(
        "SELECT COUNT(*) AS pending, MIN(created_at) AS oldest FROM webhook_deliveries WHERE state = 'pending'",
      );
      return backlogOf(row);
    },
    purge: async (before) =>
      (await sql.count("DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < $1", [before])) +
      (await sql.count('DELETE FROM webhook_attempts WHERE at < $1', [before])),
  };
}
