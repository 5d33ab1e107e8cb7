import { isProtocolError } from '#lib/errors/protocol-error.js';
import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { auditEpoch } from '#lib/ledger/audit-epoch.js';
import { isPreviousCheckpoint, verifyCheckpoint, type CheckpointPayload } from '#lib/ledger/checkpoint.js';
import type { Storage } from '../storage/interface.js';

/**
 * Recomputes every sealed epoch from the stored receipts and checks each checkpoint's
 * signature (against every key the ring ever published, read without the master key) and
 * its link to the one before. Stops at the first epoch that differs.
 */
export async function auditLedger(
  storage: Storage,
  onEpoch: (line: string) => void = () => undefined,
): Promise<{ epochs: number; receipts: number; pending: number; failure?: string }> {
  {
    const published = await storage.keys.list();
    const keys = createLocalJWKSet({
      keys: published.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: 'ES256' })),
    } as JSONWebKeySet);
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
        if (!isProtocolError(error, 'invalid_checkpoint')) throw error;
        return fail(error.message);
      }
      if (
        payload.epoch !== epoch ||
        payload.root !== stored.root ||
        payload.size !== stored.size ||
        payload.prev !== stored.prev
      ) {
        return fail('the stored checkpoint columns differ from what its JWS signs');
      }
      if (before && !isPreviousCheckpoint(payload, before.jws, before.payload))
        return fail(`its prev is not the hash of epoch ${epoch - 1}'s checkpoint`);
      const rows = await storage.receipts.epochReceipts(epoch);
      const audit = auditEpoch({ receipts: rows, root: payload.root, size: payload.size });
      if (!audit.ok) return fail(audit.problems.join('; '));
      receipts += rows.length;
      before = { jws: stored.jws, payload };
      onEpoch(`epoch ${epoch}: ${rows.length} receipts, root ${audit.root} ok`);
    }
    return { epochs: latest?.epoch ?? 0, receipts, pending };
  }
}
