import type { Command } from 'commander';
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { loadControlPlaneConfig } from '../../../config/load.js';
import { auditEpoch } from '../../../lib/ledger/audit-epoch.js';
import { CheckpointError, isPreviousCheckpoint, verifyCheckpoint, type CheckpointPayload } from '../../../lib/ledger/checkpoint.js';
import { openOfflineServices } from '../../../control-plane/src/services.js';
import { describeStorage } from '../../../control-plane/src/storage/open-storage.js';
import type { Storage } from '../../../control-plane/src/storage/types.js';
import { CliError, EXIT } from '../exit.js';
import { dataDirOptions, flagsToConfig } from '../options.js';
import { progress, say } from '../io.js';

/**
 * Recomputes every sealed epoch from the stored receipts and checks each checkpoint's
 * signature (against every key the ring ever published, read without the master key) and
 * its link to the one before. Stops at the first epoch that differs.
 */
export async function auditLedger(storage: Storage): Promise<{ epochs: number; receipts: number; pending: number; failure?: string }> {
  {
    const published = await storage.keys.list();
    const keys = createLocalJWKSet({ keys: published.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: 'ES256' })) } as JSONWebKeySet);
    const latest = await storage.receipts.latestCheckpoint();
    const pending = await storage.receipts.pendingCount();
    let receipts = 0;
    let before: { jws: string; payload: CheckpointPayload } | null = null;
    for (let epoch = 1; epoch <= (latest?.epoch ?? 0); epoch++) {
      const fail = (why: string) => ({ epochs: epoch - 1, receipts, pending, failure: `epoch ${epoch}: ${why}` });
      const stored = await storage.receipts.checkpoint(epoch);
      if (!stored) return fail('its checkpoint is missing');
      let payload: CheckpointPayload;
      try {
        payload = await verifyCheckpoint(stored.jws, keys);
      } catch (error) {
        if (!(error instanceof CheckpointError)) throw error;
        return fail(error.message);
      }
      if (payload.epoch !== epoch || payload.root !== stored.root || payload.size !== stored.size || payload.prev !== stored.prev) {
        return fail('the stored checkpoint columns differ from what its JWS signs');
      }
      if (before && !isPreviousCheckpoint(payload, before.jws, before.payload)) return fail(`its prev is not the hash of epoch ${epoch - 1}'s checkpoint`);
      const rows = await storage.receipts.epochReceipts(epoch);
      const audit = auditEpoch({ receipts: rows, root: payload.root, size: payload.size });
      if (!audit.ok) return fail(audit.problems.join('; '));
      receipts += rows.length;
      before = { jws: stored.jws, payload };
      progress(`epoch ${epoch}: ${rows.length} receipts, root ${audit.root} ok`);
    }
    return { epochs: latest?.epoch ?? 0, receipts, pending };
  }
}

export function ledgerCommand(program: Command): void {
  const ledger = program.command('ledger').description('Inspect the receipt ledger offline.');
  dataDirOptions(ledger
    .command('audit')
    .description('Recompute every epoch from the stored receipts; report the first epoch whose root (or signature, or chain link) differs. Exit 0 intact, 1 not.'))
    .action(async (options: Record<string, unknown>) => {
      const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
      progress(`auditing the ledger in ${describeStorage(config)}`);
      const offline = await openOfflineServices(config);
      const result = await auditLedger(offline.storage).finally(() => offline.close());
      if (result.failure) {
        say(`ledger audit failed at ${result.failure}`);
        throw new CliError(`ledger audit failed (${result.epochs} epoch(s) before it are intact)`, EXIT.failed);
      }
      say(`ledger intact: ${result.epochs} epoch(s), ${result.receipts} sealed receipt(s), chain and signatures verified; ${result.pending} pending`);
    });
}
