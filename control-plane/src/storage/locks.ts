// Lock keys (PostgreSQL pg_advisory_xact_lock, see `Dialect.lock`): arbitrary constants, distinct per purpose.
export const MIGRATION_LOCK = 0x6b70_0001;
export const SEALING_LOCK = 0x6b70_0002;
/** Held while a control plane changes the SAML key ring, so two replicas never both create one. */
export const SAML_RING_LOCK = 0x6b70_0003;
/** Held while a control plane changes the ES256 signing-key ring (first creation and rotation). */
export const SIGNING_RING_LOCK = 0x6b70_0004;
