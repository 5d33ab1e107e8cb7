import { isDpopError } from '#lib/dpop/errors.js';
import { checkDpopNonce, issueDpopNonce } from '#lib/dpop/nonce.js';
import { sharedReplayCheck } from '#lib/dpop/replay.js';
import { dpopRefusal } from '#lib/dpop/respond.js';
import { verifyDpopProof, type VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import type { ControlPlaneServices } from '../context.js';

export type DpopHeaderServices = Pick<ControlPlaneServices, 'config' | 'secrets' | 'state' | 'now'>;

/** The parts of a request the check reads: its method and its `DPoP` header. */
export interface DpopRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
}

/** Where a fresh `DPoP-Nonce` goes (a fastify reply fits). */
export interface DpopNonceSink {
  header(name: string, value: string): unknown;
}

/**
 * Checks the DPoP header of a request to `path` (RFC 9449 §4.3); null when none was sent. With
 * `oidc.dpopNonce` on, proofs must carry a current server nonce for this endpoint (§8, §9): a
 * stateless HMAC nonce under a key derived from the master key, so every replica agrees; a fresh
 * one goes out in `DPoP-Nonce` on every answer to a DPoP request.
 */
export async function checkDpopHeader(
  services: DpopHeaderServices,
  request: DpopRequest,
  reply: DpopNonceSink,
  path: string,
  at: 'token' | 'resource',
  extra: { accessToken?: string; boundJkt?: string } = {},
): Promise<VerifiedDpopProof | null> {
  const header = request.headers['dpop'];
  if (header === undefined) return null;
  const now = services.now();
  const audience = `${services.config.issuer}${path}`;
  const nonces = services.config.oidc.dpopNonce ? { key: services.secrets.macKey('dpop-nonce'), audience } : null;
  const fresh = nonces ? issueDpopNonce({ ...nonces, now }) : undefined;
  if (fresh !== undefined) reply.header('dpop-nonce', fresh);
  try {
    return await verifyDpopProof(header, {
      htm: request.method,
      // Rebuilt from the configured issuer, never from Host or X-Forwarded-* (RFC 9449 §4.3 check 9).
      htu: audience,
      now,
      isReplay: sharedReplayCheck(services.state, services.now),
      ...(nonces ? { nonce: (value: string) => checkDpopNonce(value, { ...nonces, now }) } : {}),
      ...extra,
    });
  } catch (error) {
    if (isDpopError(error)) throw dpopRefusal(error, at, fresh);
    throw error;
  }
}
