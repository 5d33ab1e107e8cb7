-- A counter of the changes to what a gateway's member directory is built from (docs/gateway.md#access-rules):
-- memberships and roles, orgs, usernames and their aliases, accounts created, disabled or deleted. The
-- triggers bump it in the transaction of the write itself, so no code path can change a member without
-- the next config poll seeing a new generation, on every replica; a poll that finds the generation
-- unchanged reuses the directory it built instead of reading every member again.
CREATE TABLE directory_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation BIGINT NOT NULL
);
INSERT INTO directory_generation (id, generation) VALUES (1, 1);
CREATE FUNCTION bump_directory_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE directory_generation SET generation = generation + 1;
  RETURN NULL;
END;
$$;
CREATE TRIGGER org_members_directory AFTER INSERT OR DELETE OR UPDATE OF org_id, identity_id, role ON org_members
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER orgs_directory AFTER INSERT OR DELETE OR UPDATE OF org_id, slug ON orgs
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER identities_directory AFTER INSERT OR DELETE OR UPDATE OF identity_id, username, state ON identities
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER identity_names_directory AFTER INSERT OR DELETE OR UPDATE ON identity_names
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
