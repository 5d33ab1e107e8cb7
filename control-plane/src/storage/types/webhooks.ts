// Webhooks (docs/events.md#webhooks): subscriptions, their outbox of deliveries, and the delivery log.

export type WebhookState = 'active' | 'disabled';

export interface StoredWebhook {
  webhookId: string;
  /** The owning org's id, or null for the operator's. */
  orgId: string | null;
  url: string;
  /** Receipt types or `prefix.*` patterns. */
  events: string[];
  description: string | null;
  /** The signing secret sealed under the master key. */
  secretSealed: Buffer;
  /** The secret before the last rotation, sealed, and until when it still signs. */
  previousSecretSealed: Buffer | null;
  previousSecretUntil: number | null;
  state: WebhookState;
  /** When deliveries began failing without a success since; null while they succeed. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

export type WebhookDeliveryState = 'pending' | 'delivered' | 'dead';

/** One receipt to send to one webhook: the outbox row, written in the transaction that wrote the receipt. */
export interface WebhookDelivery {
  deliveryId: string;
  webhookId: string;
  receiptHash: string;
  /** The JSON body, the same on every attempt (the signature covers it with the attempt's time). */
  payload: string;
  createdAt: number;
  attempts: number;
  nextAttemptAt: number;
  state: WebhookDeliveryState;
  lastStatus: number | null;
  lastError: string | null;
  finishedAt: number | null;
}

/** One attempt, for the delivery log. */
export interface WebhookAttempt {
  deliveryId: string;
  webhookId: string;
  attempt: number;
  at: number;
  /** The receiver's HTTP status, or null when no answer came. */
  status: number | null;
  /** Why it failed (a fetch reason or `status_<n>`), never a body. */
  error: string | null;
}

/** An attempt's outcome, written back to its delivery. */
export interface WebhookDeliveryUpdate {
  state: WebhookDeliveryState;
  attempts: number;
  nextAttemptAt: number;
  lastStatus: number | null;
  lastError: string | null;
  finishedAt: number | null;
}

export interface WebhookStore {
  insert(webhook: StoredWebhook): Promise<void>;
  get(webhookId: string): Promise<StoredWebhook | null>;
  /** The operator's webhooks (`orgId` null) or one org's, oldest first. */
  list(orgId: string | null): Promise<StoredWebhook[]>;
  /** Every active webhook: what a new receipt is matched against. */
  listActive(): Promise<StoredWebhook[]>;
  update(webhook: StoredWebhook): Promise<void>;
  /** Deletes the webhook with its deliveries and log; false when there was none. */
  remove(webhookId: string): Promise<boolean>;
  /** Records that a delivery failed (keeps an earlier start) or succeeded (clears it). */
  markFailing(webhookId: string, since: number | null): Promise<void>;
  /** Disables the webhook and ends its pending deliveries as dead; false when it was not active. */
  disable(webhookId: string, at: number): Promise<boolean>;

  enqueue(delivery: WebhookDelivery): Promise<void>;
  /** Leases up to `limit` due pending deliveries to `holder` (SKIP LOCKED on PostgreSQL). */
  claimDue(now: number, holder: string, leaseUntil: number, limit: number): Promise<WebhookDelivery[]>;
  /** Records an attempt's outcome and ends the lease; false when `holder` no longer holds it. */
  finish(deliveryId: string, holder: string, update: WebhookDeliveryUpdate): Promise<boolean>;
  recordAttempt(attempt: WebhookAttempt): Promise<void>;
  /** The webhook's latest attempts, newest first. */
  attempts(webhookId: string, limit: number): Promise<WebhookAttempt[]>;
  getDelivery(deliveryId: string): Promise<WebhookDelivery | null>;
  /** Pending deliveries across webhooks, and the creation time of the oldest (metrics). */
  backlog(): Promise<{ pending: number; oldestCreatedAt: number | null }>;
  /** Deletes finished deliveries and attempts older than `before`; returns how many rows went. */
  purge(before: number): Promise<number>;
}
