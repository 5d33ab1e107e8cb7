import { isProtocolError } from '../errors/protocol-error.js';
import { verifyCheckpoint, type CheckpointKeys, type CheckpointPayload } from './checkpoint.js';
import { verifyInclusionProof } from './merkle-tree.js';
import { hashReceipt, isReceiptHash, treeKeyOf } from './receipt.js';

/** Where a receipt sits: its epoch, position among the epoch's sorted keys, and audit path. */
export interface InclusionProof {
  epoch: number;
  index: number;
  size: number;
  path: string[];
}

export interface ReceiptProofInput {
  /** The hash the client was given (what it looked up). */
  hash: string;
  receipt: unknown;
  proof: InclusionProof;
  checkpoint: string;
}

export type ReceiptVerdict = { ok: true; checkpoint: CheckpointPayload } | { ok: false; failure: string };

/**
 * Offline verification of a sealed receipt, in order: the receipt hashes to the address
 * looked up (RFC 8785 + SHA-256); the checkpoint is a well-formed ES256 JWS signed by one of
 * `keys`; proof and checkpoint name the same epoch and size; the tree key
 * `SHA-256("keyplane:receipt:v1" || hash)` is leaf `index` under the checkpoint's root
 * (RFC 9162 §2.1.3.2).
 */
export async function verifyReceiptProof(input: ReceiptProofInput, keys: CheckpointKeys): Promise<ReceiptVerdict> {
  if (!isReceiptHash(input.hash)) return { ok: false, failure: 'the receipt hash is not 64 lower-case hex characters' };
  let computed: string;
  try {
    computed = hashReceipt(input.receipt);
  } catch {
    return { ok: false, failure: 'the receipt is not JSON' };
  }
  if (computed !== input.hash)
    return { ok: false, failure: `the receipt's canonical hash is ${computed}, not the hash looked up` };
  let checkpoint: CheckpointPayload;
  try {
    checkpoint = await verifyCheckpoint(input.checkpoint, keys);
  } catch (error) {
    return {
      ok: false,
      failure: isProtocolError(error, 'invalid_checkpoint') ? error.message : 'the checkpoint does not verify',
    };
  }
  const { proof } = input;
  if (
    !proof ||
    typeof proof !== 'object' ||
    !Array.isArray(proof.path) ||
    !proof.path.every((p) => typeof p === 'string')
  ) {
    return { ok: false, failure: 'the proof is malformed' };
  }
  if (proof.epoch !== checkpoint.epoch || proof.size !== checkpoint.size) {
    return {
      ok: false,
      failure: `the proof is for epoch ${proof.epoch} of size ${proof.size}, the checkpoint for epoch ${checkpoint.epoch} of size ${checkpoint.size}`,
    };
  }
  const included = verifyInclusionProof({
    key: treeKeyOf(input.hash),
    index: proof.index,
    size: proof.size,
    path: proof.path,
    root: checkpoint.root,
  });
  if (!included) return { ok: false, failure: 'the audit path does not lead to the checkpoint root' };
  return { ok: true, checkpoint };
}
