import type { AbsenceProof } from '#lib/ledger/absence.js';
import { isReceiptHash, treeKeyOf } from '#lib/ledger/receipt.js';
import type { InclusionProof } from '#lib/ledger/verify-receipt.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';
import type { PlacedKey } from '../storage/interface.js';

/** What the proofs read: the receipt store. */
export type ProofServices = Pick<ControlPlaneServices, 'storage'>;

export type ReceiptLookup =
  | { receipt: unknown; pending: true }
  | { receipt: unknown; proof: InclusionProof; checkpoint: string; tlog_index?: number; tree_size?: number };

/**
 * A receipt by its hash: with its proof and checkpoint once sealed. One indexed look-up by
 * hash (and one by epoch); a malformed hash is as unknown as a well-formed one.
 */
export async function lookUpReceipt({ storage: stores }: ProofServices, hash: string): Promise<ReceiptLookup> {
  const stored = isReceiptHash(hash) ? await stores.receipts.get(hash) : undefined;
  if (!stored) throw fail('unknown_receipt', 'no receipt has this hash');
  const receipt: unknown = JSON.parse(stored.body);
  if (stored.epoch === null || stored.index === null || stored.path === null) return { receipt, pending: true };
  const checkpoint = await stores.receipts.checkpoint(stored.epoch);
  if (!checkpoint) throw new Error(`epoch ${stored.epoch} has receipts but no checkpoint`);
  // Its place in the transparency log: the tree of `tree_size` leaves is the first to hold it.
  const logged = stored.tlogIndex === null ? undefined : await stores.tlog.logged(stored.epoch);
  return {
    receipt,
    proof: {
      epoch: stored.epoch,
      index: stored.index,
      size: checkpoint.size,
      path: stored.path.map((p) => p.toString('hex')),
    },
    checkpoint: checkpoint.jws,
    ...(logged && stored.tlogIndex !== null ? { tlog_index: stored.tlogIndex, tree_size: logged.treeSize } : {}),
  };
}

/** The wire form of a proof of absence: the key asked about, the epoch, and the neighbours. */
export interface AbsenceAnswer {
  absence: AbsenceProof & { epoch: number; key: string };
  checkpoint: string;
}

/**
 * Proves that `hash` is not in sealed epoch `epoch`: the keys just below and above its tree
 * key, with their positions and audit paths. The neighbours are tree keys, never receipt
 * hashes, so the answer gives nobody a look-up address.
 */
export async function proveAbsence(
  { storage: stores }: ProofServices,
  hash: string,
  epoch: number,
): Promise<AbsenceAnswer> {
  if (!isReceiptHash(hash)) throw fail('invalid_request', 'the hash must be 64 lower-case hex characters');
  const checkpoint = await stores.receipts.checkpoint(epoch);
  if (!checkpoint) throw fail('unknown_epoch', `epoch ${epoch} is not sealed`);
  const key = treeKeyOf(hash);
  const { left, match, right } = await stores.receipts.neighbours(epoch, key);
  if (match) throw fail('receipt_in_epoch', `the receipt is in epoch ${epoch}`);
  const wire = (p: PlacedKey | undefined) =>
    p ? { index: p.index, key: p.treeKey.toString('hex'), path: p.path.map((x) => x.toString('hex')) } : null;
  return {
    absence: { epoch, key: key.toString('hex'), size: checkpoint.size, left: wire(left), right: wire(right) },
    checkpoint: checkpoint.jws,
  };
}

/**
 * The signed checkpoint of one epoch, or with no epoch the latest, as a compact JWS; refused with
 * `unknown_epoch` while that epoch is not sealed.
 */
export async function checkpointOf({ storage: stores }: ProofServices, epoch?: number): Promise<string> {
  const found =
    epoch === undefined ? await stores.receipts.latestCheckpoint() : await stores.receipts.checkpoint(epoch);
  if (!found)
    throw fail('unknown_epoch', epoch === undefined ? 'no epoch has been sealed yet' : `epoch ${epoch} is not sealed`);
  return found.jws;
}
