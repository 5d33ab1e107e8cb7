-- Webhooks (docs/events.md#webhooks): the operator's (org_id NULL) and orgs'. Secrets are sealed
-- under the master key; the previous one keeps signing until previous_secret_until (a rotation).
CREATE TABLE webhooks (
  webhook_id TEXT PRIMARY KEY,
  org_id TEXT,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  description TEXT,
  secret_sealed BLOB NOT NULL,
  previous_secret_sealed BLOB,
  previous_secret_until INTEGER,
  state TEXT NOT NULL CHECK (state IN ('active', 'disabled')),
  failing_since INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX webhooks_by_org ON webhooks (org_id, created_at);
-- The outbox: one row per (receipt, webhook), written in the transaction that wrote the receipt,
-- delivered by whichever replica leases it (lease_holder, lease_until).
CREATE TABLE webhook_deliveries (
  delivery_id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL,
  receipt_hash TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
  last_status INTEGER,
  last_error TEXT,
  finished_at INTEGER,
  lease_holder TEXT,
  lease_until INTEGER
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, state);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL;
-- The delivery log: one row per attempt (status or a fetch reason, never a body).
CREATE TABLE webhook_attempts (
  delivery_id TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  at INTEGER NOT NULL,
  status INTEGER,
  error TEXT,
  PRIMARY KEY (delivery_id, attempt)
) STRICT;
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, at);
