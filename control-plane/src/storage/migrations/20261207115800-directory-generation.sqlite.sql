-- A counter of the changes to what a gateway's member directory is built from (docs/gateway.md#access-rules):
-- memberships and roles, orgs, usernames and their aliases, accounts created, disabled or deleted. The
-- triggers bump it in the transaction of the write itself, so no code path can change a member without
-- the next config poll seeing a new generation, on every replica; a poll that finds the generation
-- unchanged reuses the directory it built instead of reading every member again.
CREATE TABLE directory_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL
) STRICT;
INSERT INTO directory_generation (id, generation) VALUES (1, 1);
CREATE TRIGGER org_members_inserted_directory AFTER INSERT ON org_members
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_members_deleted_directory AFTER DELETE ON org_members
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_members_updated_directory AFTER UPDATE OF org_id, identity_id, role ON org_members
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER orgs_inserted_directory AFTER INSERT ON orgs
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER orgs_deleted_directory AFTER DELETE ON orgs
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER orgs_updated_directory AFTER UPDATE OF org_id, slug ON orgs
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER identities_inserted_directory AFTER INSERT ON identities
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER identities_deleted_directory AFTER DELETE ON identities
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER identities_updated_directory AFTER UPDATE OF identity_id, username, state ON identities
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER identity_names_inserted_directory AFTER INSERT ON identity_names
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER identity_names_deleted_directory AFTER DELETE ON identity_names
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER identity_names_updated_directory AFTER UPDATE ON identity_names
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
