import { SignJWT } from 'jose';
import { randomToken } from '../util/random.js';
import type { AssertionKey } from './assertion.js';
import type { GatewayMode } from './policy.js';

/**
 * Signed evidence of enforcement (issue 6 item 8; DESIGN "Gateway config and evidence"): what
 * this gateway holds and what it did, so the control plane can show declared policy next to
 * observed behaviour and never call anything green without fresh evidence. Signed with the
 * gateway's own key (its JWKS is at /_gate/jwks).
 */

export const EVIDENCE_TYP = 'keyplane-gateway-evidence+jwt';

export interface EvidenceInput {
  /** The gateway's public URL. */
  issuer: string;
  /** The control plane's issuer. */
  audience: string;
  clientId: string;
  /** The held config, or null while failing closed. */
  config: { version: number; hash: string; mode: GatewayMode } | null;
  /** Totals since the gateway started (the control plane takes differences between reports). */
  counts: { allowed: number; refused: Record<string, number>; observed: Record<string, number> };
  /** When a decision was last enforced (ms), or null. */
  lastEnforcementAt: number | null;
  /** When this process started (ms), so the control plane can tell a restart from a reset. */
  startedAt: number;
  now: number;
  /** How long the evidence counts as fresh (seconds). */
  ttlSeconds: number;
}

/** Signs one evidence report (ES256, `typ: keyplane-gateway-evidence+jwt`). */
export async function buildGatewayEvidence(input: EvidenceInput, key: AssertionKey): Promise<string> {
  const iat = Math.floor(input.now / 1000);
  return new SignJWT({
    client_id: input.clientId,
    config: input.config,
    counts: input.counts,
    last_enforcement_at: input.lastEnforcementAt === null ? null : new Date(input.lastEnforcementAt).toISOString(),
    started_at: new Date(input.startedAt).toISOString(),
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: EVIDENCE_TYP })
    .setIssuer(input.issuer)
    .setAudience(input.audience)
    .setSubject(input.clientId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + input.ttlSeconds)
    .setJti(randomToken(16))
    .sign(key.privateKey);
}
