-- Outbound SCIM (docs/scim.md#outbound-scim): a client's SCIM server, its bearer token sealed
-- under the master key; when its push last succeeded.
CREATE TABLE scim_push_targets (
  client_id TEXT PRIMARY KEY,
  base_url TEXT NOT NULL,
  token_sealed BYTEA NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  last_sync_at BIGINT
);
-- The outbox: one row per (client, user or group, local id), or the client's standing
-- `reconcile` row; a change queues it again (`version` grows), the delivery loop leases it and
-- pushes the subject's state as it is when sent.
CREATE TABLE scim_push_jobs (
  client_id TEXT NOT NULL,
  resource TEXT NOT NULL CHECK (resource IN ('user', 'group', 'reconcile')),
  local_id TEXT NOT NULL,
  version BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  attempts BIGINT NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
  last_status BIGINT,
  last_error TEXT,
  finished_at BIGINT,
  lease_holder TEXT,
  lease_until BIGINT,
  PRIMARY KEY (client_id, resource, local_id)
);
CREATE INDEX scim_push_jobs_due ON scim_push_jobs (next_attempt_at) WHERE state = 'pending';
-- What the remote server calls each pushed user or group (its `id`).
CREATE TABLE scim_push_links (
  client_id TEXT NOT NULL,
  resource TEXT NOT NULL CHECK (resource IN ('user', 'group')),
  local_id TEXT NOT NULL,
  remote_id TEXT NOT NULL,
  active BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (client_id, resource, local_id)
);
