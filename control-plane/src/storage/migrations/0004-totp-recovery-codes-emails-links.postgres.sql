CREATE TABLE totp_secrets (
  identity_id TEXT PRIMARY KEY REFERENCES identities (identity_id) ON DELETE CASCADE,
  state TEXT NOT NULL CHECK (state IN ('pending', 'active')),
  sealed_secret BYTEA NOT NULL,
  last_used_step BIGINT,
  created_at BIGINT NOT NULL,
  activated_at BIGINT
);
CREATE TABLE recovery_codes (
  code_id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  code_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX recovery_codes_by_identity ON recovery_codes (identity_id);
CREATE TABLE emails (
  email_id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  verified_at BIGINT,
  UNIQUE (identity_id, email)
);
-- A verified address belongs to exactly one account: magic links resolve it to one identity.
CREATE UNIQUE INDEX emails_verified_once ON emails (email) WHERE verified_at IS NOT NULL;
CREATE TABLE one_time_links (
  token_hash TEXT PRIMARY KEY,
  purpose TEXT NOT NULL CHECK (purpose IN ('signin', 'verify_email')),
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  email_id TEXT NOT NULL REFERENCES emails (email_id) ON DELETE CASCADE,
  device_id TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX one_time_links_by_expiry ON one_time_links (expires_at);
