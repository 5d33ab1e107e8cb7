-- The AAGUID of the authenticator that made each passkey (lowercase UUID, from its attested
-- credential data), so that passkeys are named after their authenticator (docs/passkeys.md).
-- Null for passkeys registered before this column.
ALTER TABLE passkeys ADD COLUMN aaguid TEXT;

-- When the person last declined the passkey offered after a sign-in without one (magic link,
-- recovery code, connection): not offered again for a month (docs/passkeys.md#upgrades).
ALTER TABLE identities ADD COLUMN passkey_upgrade_declined_at INTEGER;
