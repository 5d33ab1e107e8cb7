-- An account is active or disabled (an operator's pause); a deleted account has no row.
ALTER TABLE identities ADD COLUMN state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled'));
CREATE INDEX oidc_grants_by_identity ON oidc_grants (identity_id);
CREATE INDEX oidc_codes_by_identity ON oidc_codes (identity_id);
CREATE INDEX oidc_approvals_by_identity ON oidc_approvals (identity_id);
