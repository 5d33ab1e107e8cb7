import { calculateJwkThumbprint, type JWK } from 'jose';
import { importPublicJwk, verifyJwt } from '../crypto/jwt.js';
import { DpopError, type DpopCheck, type DpopErrorCode } from './errors.js';
import type { DpopKeyCache } from './key-cache.js';
import { normalizeHtu } from './normalize-htu.js';
import { constantEquals, equalDigests } from '../crypto/constant-equals.js';
import { sha256 } from '../crypto/sha256.js';

/** Local policy (RFC 9449 §4.3 check 5): asymmetric algorithms only, never `none` or a MAC. */
export const DPOP_ALGORITHMS = ['ES256', 'EdDSA'] as const;
export type DpopAlgorithm = (typeof DPOP_ALGORITHMS)[number];

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Members that only a private or symmetric JWK has (RFC 7518 §6). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const MAX_PROOF_LENGTH = 8192;
/** RFC 9449 §11.1: refuse oversized `jti` values so the replay cache cannot be flooded. */
const MAX_JTI_LENGTH = 256;

/** Defaults of the acceptance window (documented in docs/oidc.md). */
export const DPOP_DEFAULTS = { maxAgeSeconds: 60, maxFutureSeconds: 5 } as const;

export interface VerifyDpopProofOptions {
  /** The request method, compared exactly (check 8). */
  htm: string;
  /** The request URI as this server's public URL rebuilds it, never from client headers (check 9). */
  htu: string;
  /** Current time in milliseconds. */
  now: number;
  /** How long after `iat` a proof is accepted (check 11); also how long its `jti` is remembered. Default 60 s. */
  maxAgeSeconds?: number;
  /** How far `iat` may lie in the future to allow for client clock skew (default 5 s). */
  maxFutureSeconds?: number;
  /** The access token presented with the proof; its hash must be `ath` (check 12). */
  accessToken?: string;
  /** `computeAth(accessToken)` when the caller has it already (a cache of verified tokens). */
  accessTokenHash?: string;
  /** The `cnf.jkt` the access token is bound to; the proof key must have that thumbprint (check 12). */
  boundJkt?: string;
  /**
   * When the server requires a nonce: the expected value, or a predicate (e.g. `checkDpopNonce`).
   * A missing or unacceptable nonce fails with `use_dpop_nonce` (check 10).
   */
  nonce?: string | ((nonce: string) => boolean | Promise<boolean>);
  /** Allowed algorithms, a subset of DPOP_ALGORITHMS (default both). */
  algorithms?: readonly DpopAlgorithm[];
  /**
   * Records the `jti` for this key until `expiresAt` (ms) and answers true when it was already
   * recorded (RFC 9449 §11.1). Back it with SharedState.setIfAbsent so that replicas agree.
   * Called last, so a proof failing any other check never fills the cache.
   */
  isReplay: (jti: string, jkt: string, expiresAt: number) => Promise<boolean>;
  /** Imported proof keys and thumbprints to reuse across proofs of the same client. */
  keyCache?: DpopKeyCache;
}

export interface VerifiedDpopProof {
  /** RFC 7638 SHA-256 thumbprint of the proof key (the `cnf.jkt` to bind to). */
  jkt: string;
  /** The public key from the proof header. */
  jwk: JWK;
  jti: string;
  /** Seconds since the epoch, as in the proof. */
  iat: number;
  alg: DpopAlgorithm;
  /** The proof's nonce, if it carried one. */
  nonce?: string;
}

function refuse(check: DpopCheck, message: string, code: DpopErrorCode = 'invalid_dpop_proof'): never {
  throw new DpopError(code, check, message);
}

/** A JOSE header segment as its JSON object; throws when it is not one. */
function parseHeader(segment: string): Record<string, unknown> {
  const header: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw new TypeError('not a JSON object');
  return header as Record<string, unknown>;
}

/** base64url(SHA-256(ASCII(accessToken))), the `ath` claim (RFC 9449 §4.2). */
export function computeAth(accessToken: string): string {
  return sha256(accessToken).toString('base64url');
}

/**
 * Verifies a DPoP proof against every check of RFC 9449 §4.3 and the replay rule of §11.1.
 * `proof` is the raw `DPoP` header value as received (a string, or an array when the header
 * came more than once). Throws a DpopError (`invalid_dpop_proof` or `use_dpop_nonce`).
 */
export async function verifyDpopProof(
  proof: string | readonly string[] | undefined,
  options: VerifyDpopProofOptions,
): Promise<VerifiedDpopProof> {
  // 1. Exactly one DPoP header. Node joins repeated unknown headers with ", ", and a compact
  // JWS never contains a comma, so a comma means several headers.
  if (proof === undefined) refuse('header', 'a DPoP proof is required');
  if (Array.isArray(proof)) {
    if (proof.length !== 1) refuse('header', 'send exactly one DPoP header');
  }
  const value = (Array.isArray(proof) ? proof[0] : proof) as string;
  if (typeof value !== 'string' || value.includes(',')) refuse('header', 'send exactly one DPoP header');

  // 2. A single well-formed JWT. Only its header is read here (from the key cache when a client
  // sent it before: its proofs share one header); the verifier below decodes the whole proof, once.
  if (value.length > MAX_PROOF_LENGTH || !COMPACT_JWS.test(value)) refuse('jwt', 'the DPoP proof is not a compact JWS');
  const segment = value.slice(0, value.indexOf('.'));
  let header: Record<string, unknown>;
  try {
    header = options.keyCache ? options.keyCache.header(segment, parseHeader) : parseHeader(segment);
  } catch {
    refuse('jwt', 'the DPoP proof header or payload is not valid');
  }

  // 4. typ.
  if (header.typ !== 'dpop+jwt') refuse('typ', 'the DPoP proof typ must be dpop+jwt');

  // 5. alg: registered, asymmetric, allowed by local policy; never none or HS*.
  const allowed = options.algorithms ?? DPOP_ALGORITHMS;
  const alg = header.alg;
  if (typeof alg !== 'string' || !(allowed as readonly string[]).includes(alg))
    refuse('alg', `the DPoP proof alg must be one of ${allowed.join(', ')}`);

  // 7. jwk: present, a public key only, of the type the alg needs.
  const jwk = header.jwk as Record<string, unknown> | undefined;
  if (!jwk || typeof jwk !== 'object' || Array.isArray(jwk))
    refuse('jwk', 'the DPoP proof header must carry the public key as jwk');
  if (PRIVATE_MEMBERS.some((member) => member in jwk))
    refuse('jwk', 'the DPoP proof jwk must not contain a private key');
  const fits = alg === 'ES256' ? jwk.kty === 'EC' && jwk.crv === 'P-256' : jwk.kty === 'OKP' && jwk.crv === 'Ed25519';
  if (!fits) refuse('jwk', 'the DPoP proof jwk does not fit its alg');

  // 6. The signature verifies with that key.
  let payload: Record<string, unknown>;
  let jkt: string | undefined;
  try {
    const resolved = options.keyCache
      ? await options.keyCache.resolve(jwk as JWK, alg)
      : { key: importPublicJwk(jwk), jkt: undefined };
    jkt = resolved.jkt;
    // fast-jwt checks with node:crypto on the calling thread (WebCrypto would queue every proof
    // on the thread pool); it refuses a crit header, which no extension here understands.
    ({ payload } = verifyJwt(value, resolved.key, { alg: alg as DpopAlgorithm }));
  } catch (error) {
    // The verifier is the one decoder of the payload: a payload that does not parse is check 2's.
    const code = (error as { code?: unknown }).code;
    if (code === 'FAST_JWT_MALFORMED' || code === 'FAST_JWT_INVALID_PAYLOAD')
      refuse('jwt', 'the DPoP proof header or payload is not valid');
    refuse('signature', 'the DPoP proof signature does not verify with its jwk');
  }
  if (!payload || typeof payload !== 'object' || Array.isArray(payload))
    refuse('jwt', 'the DPoP proof payload is not a JSON object');

  // 3. Required claims, with their types.
  const { jti, htm, htu, iat } = payload;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
    refuse('claims', 'the DPoP proof needs a jti of 1 to 256 characters');
  if (typeof htm !== 'string') refuse('claims', 'the DPoP proof needs htm');
  if (typeof htu !== 'string') refuse('claims', 'the DPoP proof needs htu');
  if (typeof iat !== 'number' || !Number.isFinite(iat)) refuse('claims', 'the DPoP proof needs a numeric iat');
  if (options.accessToken !== undefined && typeof payload.ath !== 'string')
    refuse('claims', 'the DPoP proof needs ath when it accompanies an access token');
  if (payload.nonce !== undefined && typeof payload.nonce !== 'string')
    refuse('claims', 'the DPoP proof nonce must be a string');

  // 8. htm: HTTP methods are case-sensitive (RFC 9110 §9.1).
  if (htm !== options.htm) refuse('htm', 'the DPoP proof is for another method');

  // 9. htu, without query and fragment, after RFC 3986 syntax- and scheme-based normalization.
  const expectedHtu = normalizeHtu(options.htu);
  const presentedHtu = normalizeHtu(htu);
  if (expectedHtu === null || presentedHtu === null || presentedHtu !== expectedHtu)
    refuse('htu', 'the DPoP proof is for another URI');

  // 10. Server nonce, when one is required: its own error so the caller answers use_dpop_nonce.
  const nonce = payload.nonce as string | undefined;
  if (options.nonce !== undefined) {
    if (nonce === undefined) refuse('nonce', 'the DPoP proof must carry the server nonce', 'use_dpop_nonce');
    const good = typeof options.nonce === 'string' ? constantEquals(nonce, options.nonce) : await options.nonce(nonce);
    if (!good) refuse('nonce', 'the DPoP proof nonce is not current', 'use_dpop_nonce');
  }

  // 11. iat within the window, and not too far in the future.
  const iatMs = iat * 1000;
  const maxAgeMs = (options.maxAgeSeconds ?? DPOP_DEFAULTS.maxAgeSeconds) * 1000;
  const futureMs = (options.maxFutureSeconds ?? DPOP_DEFAULTS.maxFutureSeconds) * 1000;
  if (iatMs > options.now + futureMs) refuse('iat', 'the DPoP proof was issued in the future');
  if (iatMs < options.now - maxAgeMs) refuse('iat', 'the DPoP proof is too old');

  // 12. ath and key binding for resource access. Both sides are public digests (of the token the
  // caller presents, of a public key): compared without an early exit, but not hashed again.
  if (
    options.accessToken !== undefined &&
    !equalDigests(payload.ath as string, options.accessTokenHash ?? computeAth(options.accessToken))
  ) {
    refuse('ath', 'the DPoP proof ath does not match the access token');
  }
  jkt ??= await calculateJwkThumbprint(jwk as JWK, 'sha256');
  if (options.boundJkt !== undefined && !equalDigests(jkt, options.boundJkt))
    refuse('binding', 'the DPoP proof key is not the key the token is bound to');

  // §11.1: single use. Last, so a proof that fails any other check is not remembered.
  const expiresAt = iatMs + maxAgeMs;
  if (await options.isReplay(jti, jkt, Math.max(expiresAt, options.now + 1000)))
    refuse('replay', 'the DPoP proof was already used');

  return { jkt, jwk: publicJwk(jwk), jti, iat, alg: alg as DpopAlgorithm, ...(nonce !== undefined ? { nonce } : {}) };
}

/** The RFC 7638 required members only: what a JWK thumbprint and a cnf binding are about. */
function publicJwk(jwk: Record<string, unknown>): JWK {
  return jwk.kty === 'EC'
    ? { kty: 'EC', crv: jwk.crv as string, x: jwk.x as string, y: jwk.y as string }
    : { kty: 'OKP', crv: jwk.crv as string, x: jwk.x as string };
}

/** A replay-cache key for a proof: hashes the jti, so the cache holds nothing a client chose verbatim. */
export function dpopReplayKey(jti: string, jkt: string): string {
  return `dpop:jti:${jkt}:${sha256(jti).toString('base64url')}`;
}
