-- What an org owns also moves the directory generation (docs/events.md#org-webhooks): its clients and
-- SAML providers, connections, SCIM tokens, APIs, teams and sites, beside the accounts it manages (already
-- counted: an account's org is set when it is created). Each replica's webhook targets rebuild what the
-- orgs own only when the generation moved, instead of reading it all again at every poll; rows that no
-- org owns (a person's client, the operator's connection or API) leave it alone.
CREATE TRIGGER oidc_clients_inserted_ownership AFTER INSERT ON oidc_clients WHEN NEW.owner_id LIKE 'org\_%' ESCAPE '\'
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER oidc_clients_deleted_ownership AFTER DELETE ON oidc_clients WHEN OLD.owner_id LIKE 'org\_%' ESCAPE '\'
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER oidc_clients_updated_ownership AFTER UPDATE OF owner_id ON oidc_clients WHEN OLD.owner_id IS NOT NEW.owner_id
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER saml_providers_inserted_ownership AFTER INSERT ON saml_providers WHEN NEW.org_id IS NOT NULL
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER saml_providers_deleted_ownership AFTER DELETE ON saml_providers WHEN OLD.org_id IS NOT NULL
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER saml_providers_updated_ownership AFTER UPDATE OF org_id ON saml_providers WHEN OLD.org_id IS NOT NEW.org_id
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER connections_inserted_ownership AFTER INSERT ON connections WHEN NEW.org_id IS NOT NULL
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER connections_deleted_ownership AFTER DELETE ON connections WHEN OLD.org_id IS NOT NULL
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER connections_updated_ownership AFTER UPDATE OF org_id ON connections WHEN OLD.org_id IS NOT NEW.org_id
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER scim_tokens_inserted_ownership AFTER INSERT ON scim_tokens
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER scim_tokens_deleted_ownership AFTER DELETE ON scim_tokens
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER scim_tokens_updated_ownership AFTER UPDATE OF org_id ON scim_tokens WHEN OLD.org_id IS NOT NEW.org_id
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER apis_inserted_ownership AFTER INSERT ON apis WHEN NEW.org_id IS NOT NULL
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER apis_deleted_ownership AFTER DELETE ON apis WHEN OLD.org_id IS NOT NULL
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER apis_updated_ownership AFTER UPDATE OF org_id ON apis WHEN OLD.org_id IS NOT NEW.org_id
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_teams_inserted_ownership AFTER INSERT ON org_teams
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_teams_updated_ownership AFTER UPDATE OF org_id ON org_teams WHEN OLD.org_id IS NOT NEW.org_id
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_sites_inserted_ownership AFTER INSERT ON org_sites
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_sites_deleted_ownership AFTER DELETE ON org_sites
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
CREATE TRIGGER org_sites_updated_ownership AFTER UPDATE OF org_id ON org_sites WHEN OLD.org_id IS NOT NEW.org_id
BEGIN UPDATE directory_generation SET generation = generation + 1; END;
