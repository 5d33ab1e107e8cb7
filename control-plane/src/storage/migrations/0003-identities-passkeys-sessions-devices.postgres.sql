CREATE TABLE identities (
  identity_id TEXT PRIMARY KEY,
  username TEXT NOT NULL UNIQUE,
  display_name TEXT NOT NULL DEFAULT '',
  preferences TEXT NOT NULL DEFAULT '{}',
  founder INTEGER NOT NULL DEFAULT 0 CHECK (founder IN (0, 1)),
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX identities_one_founder ON identities (founder) WHERE founder = 1;
-- The name is claimed before its identity row is written (a unique claim decides a race),
-- so the reference is checked at commit.
CREATE TABLE identity_names (
  name TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
  current INTEGER NOT NULL CHECK (current IN (0, 1)),
  created_at BIGINT NOT NULL
);
CREATE INDEX identity_names_by_identity ON identity_names (identity_id, created_at);
CREATE TABLE passkeys (
  cred_id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  public_key BYTEA NOT NULL,
  counter BIGINT NOT NULL,
  transports TEXT NOT NULL DEFAULT '[]',
  backup_eligible INTEGER NOT NULL,
  backed_up INTEGER NOT NULL,
  label TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT
);
CREATE INDEX passkeys_by_identity ON passkeys (identity_id, created_at);
CREATE TABLE sessions (
  session_id TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  device_id TEXT NOT NULL,
  assurance TEXT NOT NULL CHECK (assurance IN ('recovery', 'email', 'passkey')),
  amr TEXT NOT NULL,
  auth_time BIGINT NOT NULL,
  step_up_at BIGINT,
  cred_id TEXT,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  idle_expires_at BIGINT NOT NULL,
  absolute_expires_at BIGINT NOT NULL,
  revoked_at BIGINT
);
CREATE INDEX sessions_by_identity ON sessions (identity_id, device_id);
CREATE TABLE devices (
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  device_id TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT NOT NULL,
  PRIMARY KEY (identity_id, device_id)
);
