-- Outbound SCIM (docs/scim.md#outbound-scim): a client's SCIM server, its bearer token sealed
-- under the master key; when its push last succeeded.
CREATE TABLE scim_push_targets (
  client_id TEXT PRIMARY KEY,
  base_url TEXT NOT NULL,
  token_sealed BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_sync_at INTEGER
) STRICT;
-- The outbox: one row per (client, user or group, local id), or the client's standing
-- `reconcile` row; a change queues it again (`version` grows), the delivery loop leases it and
-- pushes the subject's state as it is when sent.
CREATE TABLE scim_push_jobs (
  client_id TEXT NOT NULL,
  resource TEXT NOT NULL CHECK (resource IN ('user', 'group', 'reconcile')),
  local_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
  last_status INTEGER,
  last_error TEXT,
  finished_at INTEGER,
  lease_holder TEXT,
  lease_until INTEGER,
  PRIMARY KEY (client_id, resource, local_id)
) STRICT;
CREATE INDEX scim_push_jobs_due ON scim_push_jobs (next_attempt_at) WHERE state = 'pending';
-- What the remote server calls each pushed user or group (its `id`).
CREATE TABLE scim_push_links (
  client_id TEXT NOT NULL,
  resource TEXT NOT NULL CHECK (resource IN ('user', 'group')),
  local_id TEXT NOT NULL,
  remote_id TEXT NOT NULL,
  active INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (client_id, resource, local_id)
) STRICT;
