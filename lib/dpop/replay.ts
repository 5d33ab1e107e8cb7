import type { SharedState } from '../runtime/shared-state/types.js';
import { dpopReplayKey } from './verify-dpop-proof.js';

/**
 * The `isReplay` look-up of `verifyDpopProof`, backed by shared state: one atomic
 * `setIfAbsent` (Redis `SET NX PX`), so of two replicas seeing the same proof exactly one
 * accepts it (RFC 9449 §11.1). The entry lives until the proof could no longer be accepted.
 */
export function sharedReplayCheck(
  state: SharedState,
  now: () => number,
): (jti: string, jkt: string, expiresAt: number) => Promise<boolean> {
  return async (jti, jkt, expiresAt) => {
    const ttl = Math.max(1000, expiresAt - now());
    return !(await state.setIfAbsent(dpopReplayKey(jti, jkt), '1', ttl));
  };
}
