CREATE TABLE oidc_clients (
  client_id TEXT PRIMARY KEY,
  client_type TEXT NOT NULL CHECK (client_type IN ('public', 'confidential')),
  auth_method TEXT NOT NULL CHECK (auth_method IN ('none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt')),
  secret_hash TEXT,
  secret_issued_at INTEGER,
  metadata TEXT NOT NULL,
  owner_id TEXT,
  registration_token_hash TEXT NOT NULL,
  revision INTEGER NOT NULL CHECK (revision >= 1),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  CHECK ((client_type = 'public') = (auth_method = 'none'))
) STRICT;
CREATE INDEX oidc_clients_by_owner ON oidc_clients (owner_id) WHERE owner_id IS NOT NULL;
