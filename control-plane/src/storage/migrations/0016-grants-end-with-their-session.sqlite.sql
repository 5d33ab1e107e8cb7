-- offline = 1 only where the user approved offline_access for a client that is not a
-- gateway; every other grant is revoked when its session ends, or its client is revoked.
ALTER TABLE oidc_codes ADD COLUMN offline INTEGER NOT NULL DEFAULT 0;
ALTER TABLE oidc_grants ADD COLUMN offline INTEGER NOT NULL DEFAULT 0;
CREATE INDEX oidc_codes_by_session ON oidc_codes (session_id);
CREATE INDEX oidc_codes_by_client ON oidc_codes (client_id);
CREATE INDEX oidc_grants_by_session ON oidc_grants (session_id);
CREATE INDEX oidc_grants_by_client ON oidc_grants (client_id);
