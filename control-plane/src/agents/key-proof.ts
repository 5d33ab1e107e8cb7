import { isDpopError } from '#lib/dpop/errors.js';
import { DpopKeyCache } from '#lib/dpop/key-cache.js';
import { checkDpopNonce, issueDpopNonce } from '#lib/dpop/nonce.js';
import { dpopRefusal } from '#lib/dpop/respond.js';
import { sharedReplayCheck } from '#lib/dpop/replay.js';
import { verifyDpopProof, type VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';

/**
 * Imported agent keys and thumbprints, shared by every control plane in the process: an agent
 * signs each proof with the same key, and importing it costs as much as checking a signature.
 * Only public-key derivations are kept, so a hit never accepts what a miss would refuse.
 */
export const agentKeyCache = new DpopKeyCache(10_000);

export type KeyProofServices = Pick<ControlPlaneServices, 'config' | 'secrets' | 'state' | 'now'>;

export interface KeyProofRequest {
  /** The DPoP header as it came. */
  header: string | string[] | undefined;
  method: string;
  /** The endpoint's path; `htu` is rebuilt from the configured issuer, never from Host. */
  path: string;
}

/**
 * Proves the agent key with DPoP (RFC 9449) on a control-plane endpoint that is not a token
 * endpoint: `htm`/`htu` of this endpoint, and always a server nonce (§8), so a proof cannot be
 * made ahead of time. Without a current nonce the answer is 401 `use_dpop_nonce` with a fresh
 * one in `DPoP-Nonce`; a proof by any key but `expectedJkt` is 401 `agent_key_mismatch`.
 * `expected` may also be a literal nonce (a one-use agent-proof challenge) instead of the server's.
 */
export async function checkAgentKeyProof(
  services: KeyProofServices,
  request: KeyProofRequest,
  expectedJkt: string,
  expected: { nonce?: string } = {},
): Promise<VerifiedDpopProof> {
  const now = services.now();
  const audience = `${services.config.issuer}${request.path}`;
  const nonceKey = { key: services.secrets.macKey('agent-dpop-nonce'), audience };
  const fresh = expected.nonce === undefined ? issueDpopNonce({ ...nonceKey, now }) : undefined;
  let proof: VerifiedDpopProof;
  try {
    proof = await verifyDpopProof(request.header, {
      htm: request.method,
      htu: audience,
      now,
      nonce: expected.nonce ?? ((value: string) => checkDpopNonce(value, { ...nonceKey, now })),
      isReplay: sharedReplayCheck(services.state, services.now),
      keyCache: agentKeyCache,
    });
  } catch (error) {
    if (isDpopError(error)) throw dpopRefusal(error, 'resource', fresh);
    throw error;
  }
  if (proof.jkt !== expectedJkt) {
    throw fail('agent_key_mismatch', "the DPoP proof was signed by another key than the agent's", {
      headers: fresh ? { 'dpop-nonce': fresh } : {},
    });
  }
  return proof;
}
