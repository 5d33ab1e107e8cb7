-- SCIM 2.0 per org (docs/scim.md). A token is stored by the SHA-256 of its secret; the token id
-- is in the bearer value, so the look-up is by id and the secret is compared in constant time.
CREATE TABLE scim_tokens (
  token_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  secret_hash TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at BIGINT
);
CREATE INDEX scim_tokens_by_org ON scim_tokens (org_id, created_at);
-- A provisioned account: the SCIM userName as sent and folded (unique per org, so a
-- `userName eq` filter is an index look-up), the externalId, and the rest of the resource as sent.
CREATE TABLE scim_users (
  identity_id TEXT PRIMARY KEY REFERENCES identities (identity_id) ON DELETE CASCADE,
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  user_name TEXT NOT NULL,
  user_name_key TEXT NOT NULL,
  external_id TEXT,
  attributes TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (org_id, user_name_key)
);
CREATE INDEX scim_users_by_external_id ON scim_users (org_id, external_id) WHERE external_id IS NOT NULL;
-- The org's suspension of a managed account (SCIM `active: false`), apart from the operator's `state`.
ALTER TABLE identities ADD COLUMN suspended_at BIGINT;
CREATE TRIGGER identities_suspended_directory AFTER UPDATE OF suspended_at ON identities
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
