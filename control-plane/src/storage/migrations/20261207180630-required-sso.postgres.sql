-- Required SSO (docs/federation.md#required-sso): the longest a session of an account the
-- connection's org manages may last, in hours (at most 12).
ALTER TABLE connections ADD COLUMN session_max_hours INTEGER NOT NULL DEFAULT 12 CHECK (session_max_hours BETWEEN 1 AND 12);
