import type { ControlPlaneConfig } from '#config/types.js';
import { auditLedger } from '../ledger/audit-ledger.js';
import { openOfflineServices } from '../services.js';

/** Recomputes every epoch of the receipt ledger from the stored receipts (`keyplane ledger audit`). */
export async function auditLedgerOffline(
  config: ControlPlaneConfig,
  progress: (line: string) => void,
): ReturnType<typeof auditLedger> {
  const offline = await openOfflineServices(config);
  return auditLedger(offline.storage, progress).finally(() => offline.close());
}
