-- An approval covers a request only for the resources the user saw named (RFC 8707):
-- earlier approvals named none, so a request with a resource asks again.
ALTER TABLE oidc_approvals ADD COLUMN resources TEXT NOT NULL DEFAULT '[]';
