CREATE TABLE totp_secrets (
  identity_id TEXT PRIMARY KEY REFERENCES identities (identity_id) ON DELETE CASCADE,
  state TEXT NOT NULL CHECK (state IN ('pending', 'active')),
  sealed_secret BLOB NOT NULL,
  last_used_step INTEGER,
  created_at INTEGER NOT NULL,
  activated_at INTEGER
) STRICT;
CREATE TABLE recovery_codes (
  code_id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  code_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  used_at INTEGER
) STRICT;
CREATE INDEX recovery_codes_by_identity ON recovery_codes (identity_id);
CREATE TABLE emails (
  email_id TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  verified_at INTEGER,
  UNIQUE (identity_id, email)
) STRICT;
-- A verified address belongs to exactly one account: magic links resolve it to one identity.
CREATE UNIQUE INDEX emails_verified_once ON emails (email) WHERE verified_at IS NOT NULL;
CREATE TABLE one_time_links (
  token_hash TEXT PRIMARY KEY,
  purpose TEXT NOT NULL CHECK (purpose IN ('signin', 'verify_email')),
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  email_id TEXT NOT NULL REFERENCES emails (email_id) ON DELETE CASCADE,
  device_id TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER
) STRICT;
CREATE INDEX one_time_links_by_expiry ON one_time_links (expires_at);
