import { ProtocolError } from '../errors/protocol-error.js';
import { calculateJwkThumbprint, decodeProtectedHeader, type JWK } from 'jose';
import { checkJwt, importPublicJwk, JwtCheckError, signJwt } from '../crypto/jwt.js';
import { randomToken } from '../crypto/random.js';
import type { AssertionKey } from './assertion.js';
import type { GatewayMode } from './policy.js';

/**
 * Signed evidence of enforcement (docs/gateway.md#evidence): what
 * this gateway holds and what it did, so the control plane can show declared policy next to
 * observed behaviour and never call anything green without fresh evidence. Signed with the
 * gateway's own key, which travels in the protected header (`jwk`, with `kid` its RFC 7638
 * thumbprint), so the control plane can verify it without fetching the gateway's JWKS.
 */

export const EVIDENCE_TYP = 'keyplane-gateway-evidence+jwt';
/** The longest freshness a report may claim (`exp - iat`, seconds). */
export const EVIDENCE_MAX_TTL_SECONDS = 600;
/** How far in the future `iat` may lie (clock skew between gateway and control plane, seconds). */
export const EVIDENCE_CLOCK_SKEW_SECONDS = 60;

const MODES: readonly GatewayMode[] = ['observe', 'canary', 'enforce'];
/** The most tools a report may count refusals for (tools are named in the policy, so few). */
const MAX_TOOLS = 200;
const INSTANCE = /^[A-Za-z0-9_-]{8,64}$/;

export interface EvidenceCounts {
  allowed: number;
  refused: Record<string, number>;
  observed: Record<string, number>;
  /** MCP tool calls refused by the rules per tool: `{tool: {reason: n}}` (absent from older gateways). */
  tools?: Record<string, Record<string, number>>;
}

export interface EvidenceConfig {
  version: number;
  hash: string;
  mode: GatewayMode;
}

export interface EvidenceInput {
  /** The gateway's public URL. */
  issuer: string;
  /** The control plane's issuer. */
  audience: string;
  clientId: string;
  /** A random id of this gateway process, so replicas and restarts are told apart. */
  instance: string;
  /** The held config, or null while failing closed. */
  config: EvidenceConfig | null;
  /** Totals since the gateway started (the control plane takes differences between reports). */
  counts: EvidenceCounts;
  /** When a decision was last enforced (ms), or null. */
  lastEnforcementAt: number | null;
  /** When this process started (ms), so the control plane can tell a restart from a reset. */
  startedAt: number;
  now: number;
  /** How long the evidence counts as fresh (seconds). */
  ttlSeconds: number;
}

/** The gateway's signing key with its public JWK (embedded in the header). */
export interface EvidenceKey extends AssertionKey {
  publicJwk: JWK;
}

function publicPart(jwk: JWK): JWK {
  const { kty, crv, x, y } = jwk;
  return { kty, crv, x, y } as JWK;
}

/** Signs one evidence report (ES256, `typ: keyplane-gateway-evidence+jwt`, `jwk` and `kid` in the header). */
export async function buildGatewayEvidence(input: EvidenceInput, key: EvidenceKey): Promise<string> {
  const iat = Math.floor(input.now / 1000);
  return signJwt(
    { kid: key.kid, typ: EVIDENCE_TYP, jwk: publicPart(key.publicJwk) },
    {
      client_id: input.clientId,
      instance: input.instance,
      config: input.config,
      counts: input.counts,
      last_enforcement_at: input.lastEnforcementAt === null ? null : new Date(input.lastEnforcementAt).toISOString(),
      started_at: new Date(input.startedAt).toISOString(),
      iss: input.issuer,
      aud: input.audience,
      sub: input.clientId,
      iat,
      exp: iat + input.ttlSeconds,
      jti: randomToken(16),
    },
    key.privateKey,
    'ES256',
  );
}

/** Evidence the control plane refuses (`invalid_evidence`); the message names the field at fault. */
export class GatewayEvidenceError extends ProtocolError<'invalid_evidence'> {
  constructor(message: string) {
    super('invalid_evidence', message);
  }
}

/** A report the control plane accepted. Times in milliseconds. */
export interface VerifiedEvidence {
  clientId: string;
  instance: string;
  /** The gateway's public URL (`iss`). */
  gateway: string;
  /** RFC 7638 thumbprint of the key that signed it. */
  keyThumbprint: string;
  jti: string;
  issuedAt: number;
  expiresAt: number;
  config: EvidenceConfig | null;
  counts: EvidenceCounts;
  lastEnforcementAt: number | null;
  startedAt: number;
}

export interface VerifyEvidenceOptions {
  /** The control plane's issuer: the report's `aud`. */
  audience: string;
  /** The client that authenticated the request: the report's `sub` and `client_id`. */
  clientId: string;
  /** Milliseconds. */
  now: number;
  /** The client's registered `jwks`, when it has one: the signing key must be among them. */
  registeredKeys?: readonly JWK[];
}

/** The name of the claim the check refused (its own message stays out of what the sender is told). */
function claimOf(error: unknown): string {
  const claim = (error as { claim?: unknown }).claim;
  return typeof claim === 'string' && /^[a-z_]{1,32}$/i.test(claim) ? claim : 'set';
}

function bad(message: string): never {
  throw new GatewayEvidenceError(message);
}

function isCountMap(value: unknown): value is Record<string, number> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const entries = Object.entries(value);
  return (
    entries.length <= 100 && entries.every(([k, n]) => k.length <= 64 && Number.isSafeInteger(n) && (n as number) >= 0)
  );
}

function readTime(value: unknown, name: string, nullable: boolean): number | null {
  if (value === null && nullable) return null;
  const at = typeof value === 'string' ? Date.parse(value) : NaN;
  if (!Number.isFinite(at)) bad(`${name} must be an RFC 3339 time${nullable ? ' or null' : ''}`);
  return at;
}

/**
 * Verifies a report: ES256 with the embedded `jwk`, `kid` = its thumbprint, `typ`, `aud` = the
 * control plane, `sub` and `client_id` = the authenticated client, not expired, `iat` at most
 * 60 s ahead, freshness at most 10 minutes; and, for a client with registered `jwks`, a key
 * among them. Throws GatewayEvidenceError with what is wrong.
 */
export async function verifyGatewayEvidence(jws: string, options: VerifyEvidenceOptions): Promise<VerifiedEvidence> {
  let header;
  try {
    header = decodeProtectedHeader(jws);
  } catch {
    bad('the evidence is not a compact JWS');
  }
  if (header.typ !== EVIDENCE_TYP) bad(`typ must be ${EVIDENCE_TYP}`);
  if (header.alg !== 'ES256') bad('alg must be ES256');
  if (typeof header.jwk !== 'object' || header.jwk === null)
    bad('the protected header must carry the signing key as jwk');
  let payload: Record<string, unknown>;
  try {
    // The key travels in the protected header (checked against the registered keys below).
    ({ payload } = await checkJwt(jws, importPublicJwk(header.jwk as Record<string, unknown>), {
      algorithms: ['ES256'],
      typ: EVIDENCE_TYP,
      audience: options.audience,
      subject: options.clientId,
      now: options.now,
      requiredClaims: ['iss', 'iat', 'exp', 'jti'],
    }));
  } catch (error) {
    const code = error instanceof JwtCheckError ? error.code : undefined;
    if (code === 'expired') bad('the evidence has expired');
    if (code === 'claim') bad(`the evidence claim ${claimOf(error)} is invalid`);
    bad('the evidence signature does not verify with its embedded key');
  }
  const thumbprint = await calculateJwkThumbprint(header.jwk as JWK, 'sha256');
  if (header.kid !== thumbprint) bad('kid must be the RFC 7638 thumbprint of the embedded jwk');
  if (options.registeredKeys) {
    const registered = await Promise.all(
      options.registeredKeys.map((key) => calculateJwkThumbprint(key, 'sha256').catch(() => null)),
    );
    if (!registered.includes(thumbprint)) bad('the signing key is not among the keys registered for this client');
  }
  const iat = payload['iat'] as number;
  const exp = payload['exp'] as number;
  if (iat * 1000 > options.now + EVIDENCE_CLOCK_SKEW_SECONDS * 1000) bad('iat lies in the future');
  if (exp <= iat || exp - iat > EVIDENCE_MAX_TTL_SECONDS)
    bad(`exp must be after iat and at most ${EVIDENCE_MAX_TTL_SECONDS} s later`);
  if (payload['client_id'] !== options.clientId) bad('client_id must be the authenticated client');
  const instance = payload['instance'];
  if (typeof instance !== 'string' || !INSTANCE.test(instance))
    bad('instance must be 8 to 64 characters of [A-Za-z0-9_-]');
  const iss = payload['iss'] as string;
  if (typeof iss !== 'string' || iss.length > 2048) bad("iss must be the gateway's public URL");
  const config = payload['config'];
  let held: EvidenceConfig | null = null;
  if (config !== null) {
    const c = config as Record<string, unknown> | undefined;
    if (
      typeof c !== 'object' ||
      c === null ||
      !Number.isSafeInteger(c['version']) ||
      (c['version'] as number) < 1 ||
      typeof c['hash'] !== 'string' ||
      !/^[0-9a-f]{64}$/.test(c['hash']) ||
      !MODES.includes(c['mode'] as GatewayMode)
    ) {
      bad('config must be {version, hash, mode} or null');
    }
    held = { version: c['version'] as number, hash: c['hash'] as string, mode: c['mode'] as GatewayMode };
  }
  const counts = payload['counts'] as Record<string, unknown> | undefined;
  if (
    typeof counts !== 'object' ||
    counts === null ||
    !Number.isSafeInteger(counts['allowed']) ||
    (counts['allowed'] as number) < 0 ||
    !isCountMap(counts['refused']) ||
    !isCountMap(counts['observed'])
  ) {
    bad('counts must be {allowed, refused: {reason: n}, observed: {reason: n}}');
  }
  const tools = counts['tools'];
  if (
    tools !== undefined &&
    (typeof tools !== 'object' ||
      tools === null ||
      Array.isArray(tools) ||
      Object.keys(tools).length > MAX_TOOLS ||
      !Object.keys(tools).every((tool) => tool.length <= 128) ||
      !Object.values(tools).every(isCountMap))
  ) {
    bad(`counts.tools must be {tool: {reason: n}} with at most ${MAX_TOOLS} tools`);
  }
  return {
    clientId: options.clientId,
    instance,
    gateway: iss,
    keyThumbprint: thumbprint,
    jti: String(payload['jti']),
    issuedAt: iat * 1000,
    expiresAt: exp * 1000,
    config: held,
    counts: {
      allowed: counts['allowed'] as number,
      refused: counts['refused'] as Record<string, number>,
      observed: counts['observed'] as Record<string, number>,
      ...(tools === undefined ? {} : { tools: tools as Record<string, Record<string, number>> }),
    },
    lastEnforcementAt: readTime(payload['last_enforcement_at'], 'last_enforcement_at', true),
    startedAt: readTime(payload['started_at'], 'started_at', false)!,
  };
}
