-- Webhooks (docs/events.md#webhooks): the operator's (org_id NULL) and orgs'. Secrets are sealed
-- under the master key; the previous one keeps signing until previous_secret_until (a rotation).
CREATE TABLE webhooks (
  webhook_id TEXT PRIMARY KEY,
  org_id TEXT,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  description TEXT,
  secret_sealed BYTEA NOT NULL,
  previous_secret_sealed BYTEA,
  previous_secret_until BIGINT,
  state TEXT NOT NULL CHECK (state IN ('active', 'disabled')),
  failing_since BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX webhooks_by_org ON webhooks (org_id, created_at);
-- The outbox: one row per (receipt, webhook), written in the transaction that wrote the receipt,
-- delivered by whichever replica leases it (lease_holder, lease_until).
CREATE TABLE webhook_deliveries (
  delivery_id TEXT PRIMARY KEY,
  webhook_id TEXT NOT NULL,
  receipt_hash TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  attempts BIGINT NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
  last_status BIGINT,
  last_error TEXT,
  finished_at BIGINT,
  lease_holder TEXT,
  lease_until BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, state);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL;
-- The delivery log: one row per attempt (status or a fetch reason, never a body).
CREATE TABLE webhook_attempts (
  delivery_id TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  attempt BIGINT NOT NULL,
  at BIGINT NOT NULL,
  status BIGINT,
  error TEXT,
  PRIMARY KEY (delivery_id, attempt)
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, at);
