-- The grant an exchanged token's grant came from (RFC 8693 token exchange): an exchanged token
-- stands only while every grant up its chain does (docs/security.md#token-exchange). Null for
-- every other grant, and for grants written before this column.
ALTER TABLE oidc_grants ADD COLUMN source_grant_id TEXT;
CREATE INDEX oidc_grants_source ON oidc_grants (source_grant_id);
