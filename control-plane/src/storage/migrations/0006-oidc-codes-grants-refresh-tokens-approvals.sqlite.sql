CREATE TABLE oidc_codes (
  code_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  resource TEXT,
  nonce TEXT,
  code_challenge TEXT NOT NULL,
  dpop_jkt TEXT,
  assurance TEXT NOT NULL,
  amr TEXT NOT NULL,
  auth_time INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  consumed_at INTEGER,
  grant_id TEXT
) STRICT;
CREATE INDEX oidc_codes_by_expiry ON oidc_codes (expires_at);
CREATE TABLE oidc_grants (
  grant_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  resource TEXT,
  assurance TEXT NOT NULL,
  amr TEXT NOT NULL,
  auth_time INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  revoked_at INTEGER
) STRICT;
CREATE TABLE oidc_refresh_tokens (
  token_hash TEXT PRIMARY KEY,
  grant_id TEXT NOT NULL REFERENCES oidc_grants (grant_id) ON DELETE CASCADE,
  dpop_jkt TEXT,
  created_at INTEGER NOT NULL,
  idle_expires_at INTEGER NOT NULL,
  used_at INTEGER
) STRICT;
CREATE INDEX oidc_refresh_tokens_by_grant ON oidc_refresh_tokens (grant_id);
CREATE TABLE oidc_revoked_access_tokens (
  jti TEXT PRIMARY KEY,
  expires_at INTEGER NOT NULL
) STRICT;
CREATE TABLE oidc_approvals (
  identity_id TEXT NOT NULL,
  client_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  approved_at INTEGER NOT NULL,
  PRIMARY KEY (identity_id, client_id)
) STRICT;
