CREATE INDEX sessions_by_revoked_at ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;
