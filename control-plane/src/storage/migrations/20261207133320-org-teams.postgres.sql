-- Teams in organizations (docs/orgs.md#teams): `slug` is fixed at creation and names the team in
-- paths, the `groups` claim ("<org>/<team>") and access rules; `display_name` is kept exactly as
-- given (SCIM Groups' displayName). A team member must be a member of the org: the foreign key to
-- org_members takes the team memberships with the org membership, and a team's with the team.
CREATE TABLE org_teams (
  team_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  slug TEXT NOT NULL,
  display_name TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (org_id, slug)
);
CREATE TABLE org_team_members (
  team_id TEXT NOT NULL REFERENCES org_teams (team_id) ON DELETE CASCADE,
  org_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  added_at BIGINT NOT NULL,
  PRIMARY KEY (team_id, identity_id),
  FOREIGN KEY (org_id, identity_id) REFERENCES org_members (org_id, identity_id) ON DELETE CASCADE
);
CREATE INDEX org_team_members_by_identity ON org_team_members (identity_id);
-- The gateway's member directory carries team memberships: a change bumps its generation.
CREATE TRIGGER org_team_members_directory AFTER INSERT OR DELETE ON org_team_members
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER org_teams_directory AFTER DELETE ON org_teams
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
