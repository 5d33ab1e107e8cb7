import type { ControlPlaneConfig } from '#config/types.js';
import { auditLedger } from '../ledger/audit-ledger.js';
import { openOfflineServices } from '../services.js';
import { createSecrets } from '../keys/secrets.js';
import { resolveMasterKey } from '../keys/master-key.js';
import { NoteKeyRing } from '../ledger/note-keys.js';

const DAY_MS = 86_400_000;

/**
 * `keyplane ledger rotate-note-key`: a new Ed25519 note key signs checkpoints from now on beside the
 * old one, which stops after `overlapDays`, so witnesses that pinned it keep cosigning meanwhile.
 * Running servers pick it up within 10 s. Returns the new key's vkey.
 */
export async function rotateNoteKeyOffline(config: ControlPlaneConfig, overlapDays: number): Promise<string> {
  const offline = await openOfflineServices(config);
  try {
    const secrets = createSecrets(resolveMasterKey(config.masterKey, config.dataDir).key);
    const ring = new NoteKeyRing(offline.storage, secrets, config.issuer ?? 'http://localhost', Date.now);
    await ring.reload();
    if (ring.logVerifierKeys().length === 0)
      throw new Error('the store has no note key yet: start the control plane once');
    return await ring.rotateLogKey(overlapDays * DAY_MS);
  } finally {
    await offline.close();
  }
}

/** Recomputes every epoch of the receipt ledger from the stored receipts (`keyplane ledger audit`). */
export async function auditLedgerOffline(
  config: ControlPlaneConfig,
  progress: (line: string) => void,
): ReturnType<typeof auditLedger> {
  const offline = await openOfflineServices(config);
  return auditLedger(offline.storage, progress).finally(() => offline.close());
}
