CREATE TABLE saml_keys (
  kid TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('next', 'current', 'retired')),
  certificate_pem TEXT NOT NULL,
  sealed_private_key BYTEA NOT NULL,
  created_at BIGINT NOT NULL,
  activated_at BIGINT,
  retired_at BIGINT,
  not_after BIGINT NOT NULL
);
CREATE TABLE saml_providers (
  id TEXT PRIMARY KEY,
  entity_id TEXT NOT NULL UNIQUE,
  name TEXT,
  acs_urls TEXT NOT NULL,
  slo_url TEXT,
  certificate_pem TEXT NOT NULL,
  name_id_format TEXT NOT NULL,
  attributes TEXT NOT NULL,
  allow_idp_initiated INTEGER NOT NULL CHECK (allow_idp_initiated IN (0, 1)),
  want_signed_requests INTEGER NOT NULL CHECK (want_signed_requests IN (0, 1)),
  org_id TEXT REFERENCES orgs (org_id) ON DELETE CASCADE,
  revision INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX saml_providers_by_org ON saml_providers (org_id, created_at);
