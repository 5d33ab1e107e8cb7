-- Teams in organizations (docs/orgs.md#teams): `slug` is fixed at creation and names the team in
-- paths, the `groups` claim ("<org>/<team>") and access rules; `display_name` is kept exactly as
-- given (SCIM Groups' displayName). A team member must be a member of the org: the foreign key to
-- org_members takes the team memberships with the org membership, and a team's with the team.
CREATE TABLE org_teams (
  team_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs (org_id) ON DELETE CASCADE,
  slug TEXT NOT NULL,
  display_name TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (org_id, slug)
) STRICT;
CREATE TABLE org_team_members (
  team_id TEXT NOT NULL REFERENCES org_teams (team_id) ON DELETE CASCADE,
  org_id TEXT NOT NULL,
  identity_id TEXT NOT NULL,
  added_at INTEGER NOT NULL,
  PRIMARY KEY (team_id, identity_id),
  FOREIGN KEY (org_id, identity_id) REFERENCES org_members (org_id, identity_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX org_team_members_by_identity ON org_team_members (identity_id);
-- The gateway's member directory carries team memberships: a change bumps its generation.
CREATE TRIGGER org_team_members_inserted_directory AFTER INSERT ON org_team_members
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_team_members_deleted_directory AFTER DELETE ON org_team_members
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_teams_deleted_directory AFTER DELETE ON org_teams
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
