-- A service provider's access.orgs (docs/saml.md#who-may-sign-in): JSON [{slug, roles?}], only members of
-- those orgs (in those roles) get an assertion; null admits any account, as before.
ALTER TABLE saml_providers ADD COLUMN access_orgs TEXT;
