-- An org's passkey policy for the accounts it manages (docs/passkeys.md#org-policy): AAGUIDs
-- allowed and denied (JSON lists), whether a verified attestation is required, when it took
-- effect and until when passkeys registered before then keep working.
CREATE TABLE org_passkey_policies (
  org_id TEXT PRIMARY KEY REFERENCES orgs (org_id) ON DELETE CASCADE,
  aaguids_allowed TEXT NOT NULL,
  aaguids_denied TEXT NOT NULL,
  attestation TEXT NOT NULL CHECK (attestation IN ('none', 'required')),
  effective_at BIGINT NOT NULL,
  grace_until BIGINT NOT NULL,
  updated_by TEXT NOT NULL
);
-- 1 when the passkey's attestation statement was verified against the FIDO metadata at registration.
ALTER TABLE passkeys ADD COLUMN attested INTEGER NOT NULL DEFAULT 0;
