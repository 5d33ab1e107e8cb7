import { isProtocolError } from '../errors/protocol-error.js';
import {
  decodeCheckpoint,
  isPreviousCheckpoint,
  verifyCheckpoint,
  type CheckpointKeys,
  type CheckpointPayload,
} from './checkpoint.js';

export interface ChainVerdict {
  ok: boolean;
  /** Epochs whose checkpoints were fetched and checked on the way. */
  followed: number[];
  failure?: string;
}

/**
 * Checks that checkpoints `a` and `b` (compact JWSs) lie on one chain: from the later of the
 * two, each earlier checkpoint is fetched with `getCheckpoint(epoch)`, its signature checked
 * against `keys`, and its hash matched with the `prev` of the one after it, until the earlier
 * epoch is reached, where the fetched checkpoint must be exactly the other one. A pinned
 * checkpoint thereby vouches for every checkpoint chained to it, before or after.
 */
export async function verifyCheckpointChain(
  a: string,
  b: string,
  getCheckpoint: (epoch: number) => Promise<string>,
  keys: CheckpointKeys,
): Promise<ChainVerdict> {
  const followed: number[] = [];
  let later: { jws: string; payload: CheckpointPayload };
  let earlier: { jws: string; payload: CheckpointPayload };
  try {
    const pa = decodeCheckpoint(a).payload;
    const pb = decodeCheckpoint(b).payload;
    [later, earlier] =
      pa.epoch >= pb.epoch
        ? [
            { jws: a, payload: pa },
            { jws: b, payload: pb },
          ]
        : [
            { jws: b, payload: pb },
            { jws: a, payload: pa },
          ];
  } catch (error) {
    return { ok: false, followed, failure: (error as Error).message };
  }
  let current = later;
  while (current.payload.epoch > earlier.payload.epoch) {
    const epoch = current.payload.epoch - 1;
    let jws: string;
    let payload: CheckpointPayload;
    try {
      jws = await getCheckpoint(epoch);
      payload = await verifyCheckpoint(jws, keys);
    } catch (error) {
      if (!isProtocolError(error, 'invalid_checkpoint')) throw error;
      return { ok: false, followed, failure: `checkpoint ${epoch}: ${error.message}` };
    }
    followed.push(epoch);
    if (!isPreviousCheckpoint(current.payload, jws, payload)) {
      return {
        ok: false,
        followed,
        failure: `the prev of epoch ${current.payload.epoch} is not the hash of the checkpoint served for epoch ${epoch}`,
      };
    }
    current = { jws, payload };
  }
  if (current.jws !== earlier.jws) {
    return {
      ok: false,
      followed,
      failure: `the chain reaches epoch ${earlier.payload.epoch} at a different checkpoint than the one given: the history was rewritten (a fork)`,
    };
  }
  return { ok: true, followed };
}
