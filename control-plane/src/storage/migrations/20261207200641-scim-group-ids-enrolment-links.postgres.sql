-- A SCIM Group's externalId (docs/scim.md#groups): kept beside the team it names, so that
-- `externalId eq "…"` on /Groups, the look-up Entra ID and Okta make, is an index look-up.
CREATE TABLE scim_groups (
  team_id TEXT PRIMARY KEY REFERENCES org_teams (team_id) ON DELETE CASCADE,
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  external_id TEXT NOT NULL
);
CREATE INDEX scim_groups_by_external_id ON scim_groups (org_id, external_id);
-- A passkey enrolment link mailed to a provisioned account (docs/scim.md#enrolment-links), stored by
-- the SHA-256 of its token; used once (`used_at` set by one conditional update).
CREATE TABLE enrolment_links (
  token_hash TEXT PRIMARY KEY,
  identity_id TEXT NOT NULL REFERENCES identities (identity_id) ON DELETE CASCADE,
  email_id TEXT NOT NULL REFERENCES emails (email_id) ON DELETE CASCADE,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX enrolment_links_by_expiry ON enrolment_links (expires_at);
CREATE INDEX enrolment_links_by_identity ON enrolment_links (identity_id);
