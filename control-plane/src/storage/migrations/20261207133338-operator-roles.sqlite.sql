-- Who runs the instance from the console (docs/console.md#who): an operator changes things, an
-- auditor reads and exports. One role per account; an account that ends takes its role with it.
CREATE TABLE operator_roles (
  identity_id TEXT PRIMARY KEY REFERENCES identities (identity_id) ON DELETE CASCADE,
  role TEXT NOT NULL CHECK (role IN ('operator', 'auditor')),
  granted_at INTEGER NOT NULL,
  granted_by TEXT
) STRICT;
CREATE INDEX operator_roles_by_role ON operator_roles (role, identity_id);
-- The founder is an operator from the start (before this migration the founder's session was the operator's).
INSERT INTO operator_roles (identity_id, role, granted_at, granted_by)
  SELECT identity_id, 'operator', created_at, NULL FROM identities WHERE founder = 1;
