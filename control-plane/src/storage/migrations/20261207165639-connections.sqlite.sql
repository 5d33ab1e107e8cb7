-- Connections: upstream identity providers an org (org_id) or the operator (org_id NULL) adds
-- (docs/federation.md). `settings` is the type's JSON (an OIDC issuer, client id, scopes, tenant
-- pin); `secret_sealed` its sealed secret (a client secret or a private_key_jwt key).
CREATE TABLE connections (
  connection_id TEXT PRIMARY KEY,
  org_id TEXT REFERENCES orgs (org_id) ON DELETE CASCADE,
  type TEXT NOT NULL CHECK (type IN ('oidc', 'saml')),
  name TEXT NOT NULL,
  settings TEXT NOT NULL,
  secret_sealed BLOB,
  domains TEXT NOT NULL,
  jit TEXT,
  required INTEGER NOT NULL,
  max_assurance TEXT NOT NULL CHECK (max_assurance IN ('email', 'passkey')),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX connections_by_org ON connections (org_id, created_at);
-- Who a federated identity is: (connection, upstream subject), the subject kept as a keyed hash.
CREATE TABLE federated_identities (
  connection_id TEXT NOT NULL REFERENCES connections (connection_id) ON DELETE CASCADE,
  subject_hash TEXT NOT NULL,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  last_sign_in_at INTEGER,
  PRIMARY KEY (connection_id, subject_hash)
) STRICT;
CREATE INDEX federated_identities_by_identity ON federated_identities (identity_id);
-- The connection a session's latest sign-in came through (the `idp` claim of its tokens).
CREATE TABLE federated_sessions (
  session_id TEXT PRIMARY KEY REFERENCES sessions (session_id) ON DELETE CASCADE,
  connection_id TEXT NOT NULL,
  signed_in_at INTEGER NOT NULL
) STRICT;
