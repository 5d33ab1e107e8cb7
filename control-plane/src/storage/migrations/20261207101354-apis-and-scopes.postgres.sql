-- APIs with their own scopes (docs/apis.md): one row per resource URI; scopes, allowed_clients and
-- allowed_orgs are JSON arrays; org_id is null for the operator's APIs.
CREATE TABLE apis (
  api_id TEXT PRIMARY KEY,
  resource TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  org_id TEXT,
  scopes TEXT NOT NULL,
  allowed_clients TEXT NOT NULL,
  allowed_orgs TEXT NOT NULL,
  revision BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX apis_by_org ON apis (org_id);
