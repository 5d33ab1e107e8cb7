-- What an org owns also moves the directory generation (docs/events.md#org-webhooks): its clients and
-- SAML providers, connections, SCIM tokens, APIs, teams and sites, beside the accounts it manages (already
-- counted: an account's org is set when it is created). Each replica's webhook targets rebuild what the
-- orgs own only when the generation moved, instead of reading it all again at every poll; rows that no
-- org owns (a person's client, the operator's connection or API) leave it alone.
CREATE TRIGGER oidc_clients_inserted_ownership AFTER INSERT ON oidc_clients
FOR EACH ROW WHEN (NEW.owner_id LIKE 'org\_%' ESCAPE '\') EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER oidc_clients_deleted_ownership AFTER DELETE ON oidc_clients
FOR EACH ROW WHEN (OLD.owner_id LIKE 'org\_%' ESCAPE '\') EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER oidc_clients_updated_ownership AFTER UPDATE OF owner_id ON oidc_clients
FOR EACH ROW WHEN (OLD.owner_id IS DISTINCT FROM NEW.owner_id) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER saml_providers_inserted_ownership AFTER INSERT ON saml_providers
FOR EACH ROW WHEN (NEW.org_id IS NOT NULL) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER saml_providers_deleted_ownership AFTER DELETE ON saml_providers
FOR EACH ROW WHEN (OLD.org_id IS NOT NULL) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER saml_providers_updated_ownership AFTER UPDATE OF org_id ON saml_providers
FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER connections_inserted_ownership AFTER INSERT ON connections
FOR EACH ROW WHEN (NEW.org_id IS NOT NULL) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER connections_deleted_ownership AFTER DELETE ON connections
FOR EACH ROW WHEN (OLD.org_id IS NOT NULL) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER connections_updated_ownership AFTER UPDATE OF org_id ON connections
FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER scim_tokens_inserted_ownership AFTER INSERT ON scim_tokens
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER scim_tokens_deleted_ownership AFTER DELETE ON scim_tokens
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER scim_tokens_updated_ownership AFTER UPDATE OF org_id ON scim_tokens
FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER apis_inserted_ownership AFTER INSERT ON apis
FOR EACH ROW WHEN (NEW.org_id IS NOT NULL) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER apis_deleted_ownership AFTER DELETE ON apis
FOR EACH ROW WHEN (OLD.org_id IS NOT NULL) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER apis_updated_ownership AFTER UPDATE OF org_id ON apis
FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER org_teams_inserted_ownership AFTER INSERT ON org_teams
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER org_teams_updated_ownership AFTER UPDATE OF org_id ON org_teams
FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER org_sites_inserted_ownership AFTER INSERT ON org_sites
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER org_sites_deleted_ownership AFTER DELETE ON org_sites
FOR EACH STATEMENT EXECUTE FUNCTION bump_directory_generation();
CREATE TRIGGER org_sites_updated_ownership AFTER UPDATE OF org_id ON org_sites
FOR EACH ROW WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id) EXECUTE FUNCTION bump_directory_generation();
