import { createPublicKey, KeyObject, type JsonWebKey, type webcrypto } from 'node:crypto';
import { createDecoder, createSigner, createVerifier, type Algorithm } from 'fast-jwt';
import type { JWK, JWTVerifyGetKey } from 'jose';

/**
 * The one JWS module: every JWT Keyplane signs or checks itself (ID, access and logout tokens,
 * DPoP proofs, client and agent assertions, request objects, the gateway's assertion, config and
 * evidence, agent proofs, checkpoints, ratings) goes through here, on fast-jwt, which signs and
 * verifies with node:crypto on the calling thread: WebCrypto, as jose uses it, queues every call
 * on the thread pool, which costs more than the elliptic-curve arithmetic itself (bench/jws.ts,
 * docs/performance.md#one-jws-library). jose stays for what is not a JWS: JWK import and export,
 * thumbprints, the JWKS getters (whose keys `checkJwt` takes) and the gateway's JWE cookie.
 * test/lint/jws-library.test.ts keeps jose's sign and verify functions out of every other module.
 */

/** The asymmetric JWS algorithms Keyplane signs with (RFC 7518 §3.4, RFC 8037 §3.1). */
export type JwtAlgorithm = 'ES256' | 'EdDSA';

type Signer = (payload: Record<string, unknown>) => string;
type Verifier = (token: string) => { header: Record<string, unknown>; payload: Record<string, unknown>; input: string };

const fromCryptoKey = new WeakMap<object, KeyObject>();
const signers = new WeakMap<KeyObject, Map<string, Signer>>();
const verifiers = new WeakMap<KeyObject, Map<string, Verifier>>();
const decodeComplete = createDecoder({ complete: true }) as unknown as (token: string) => DecodedJwt;

/** A JWT split and parsed, before any check. */
export interface DecodedJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
}

/**
 * The node:crypto KeyObject of a key, remembered per WebCrypto key, so that the signers and
 * verifiers made for it are built once.
 */
export function nodeKey(key: KeyObject | webcrypto.CryptoKey): KeyObject {
  if (key instanceof KeyObject) return key;
  let found = fromCryptoKey.get(key);
  if (!found) {
    found = KeyObject.from(key);
    fromCryptoKey.set(key, found);
  }
  return found;
}

/** A public JWK (EC P-256 or OKP Ed25519) as a KeyObject; throws when it is not a valid public key. */
export function importPublicJwk(jwk: Record<string, unknown>): KeyObject {
  // node:crypto would quietly derive the public key from a private JWK; a public key is expected.
  if ('d' in jwk) throw new TypeError('a private JWK where a public key is expected');
  const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  if (key.type !== 'public') throw new TypeError('not a public key');
  return key;
}

function memo<T>(store: WeakMap<KeyObject, Map<string, T>>, key: KeyObject, id: string, make: () => T): T {
  let byId = store.get(key);
  if (!byId) store.set(key, (byId = new Map()));
  let found = byId.get(id);
  if (!found) {
    found = make();
    byId.set(id, found);
  }
  return found;
}

/**
 * Signs `payload` as a compact JWT with `alg` and the given header members (`kid`, `typ`, `jwk`,
 * …). The signer for a key and header is built once (fast-jwt checks the key then). The payload
 * is signed as given: no `iat` is added.
 */
export function signJwt(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  key: KeyObject | webcrypto.CryptoKey,
  alg: JwtAlgorithm,
): string {
  const keyObject = nodeKey(key);
  // fast-jwt keeps a given iat, adds one when it is missing, and drops it with noTimestamp.
  const noTimestamp = !('iat' in payload);
  const signer = memo(signers, keyObject, `${alg} ${noTimestamp} ${JSON.stringify(header)}`, () => {
    const { kid, ...rest } = header;
    return createSigner({
      key: keyObject.export({ format: 'pem', type: 'pkcs8' }) as string,
      algorithm: alg,
      noTimestamp,
      ...(typeof kid === 'string' ? { kid } : {}),
      // typ is written only when given (fast-jwt would default it to JWT).
      header: { typ: undefined, ...rest, alg },
    }) as Signer;
  });
  return signer(payload);
}

export interface VerifyJwtOptions {
  /** The one algorithm accepted: Keyplane's own (`JwtAlgorithm`) or a client's (RS256, PS256). */
  alg: string;
  /** The `typ` the header must carry (compared as RFC 8725 §3.11 suggests, without `application/`). */
  typ?: string;
  /** The `iss` the claims must carry. */
  issuer?: string;
}

/**
 * Checks a compact JWT's signature by `key` with `alg` (and `typ`, `iss` when given) and returns
 * its header and claims; throws on anything off, `crit` headers included (RFC 7515 §4.1.11: no
 * extension is understood here). Time claims are left to the caller, which holds the clock.
 */
export function verifyJwt(token: string, key: KeyObject, options: VerifyJwtOptions): DecodedJwt & { input: string } {
  const verifier = memo(verifiers, key, JSON.stringify([options.alg, options.typ, options.issuer]), () => {
    return createVerifier({
      key: key.export({ format: 'pem', type: 'spki' }) as string,
      algorithms: [options.alg as Algorithm],
      complete: true,
      // The caller's clock decides exp and nbf (tests and replicas pass `now`).
      ignoreExpiration: true,
      ignoreNotBefore: true,
      ...(options.typ ? { checkTyp: options.typ } : {}),
      ...(options.issuer ? { allowedIss: options.issuer, requiredClaims: ['iss'] } : {}),
    }) as unknown as Verifier;
  });
  return verifier(token);
}

/** Splits a compact JWT and parses its header and claims without checking anything else; throws when malformed. */
export function decodeJwt(token: string): DecodedJwt {
  const { header, payload } = decodeComplete(token);
  return { header, payload };
}

/**
 * Checks the time claims of verified claims against `now` (ms): `exp` must be a number in the
 * future (required unless `requireExp` is false), `nbf` when present must have passed.
 */
export function checkJwtTimes(
  claims: Record<string, unknown>,
  now: number,
  options: { requireExp?: boolean; toleranceSeconds?: number } = {},
): boolean {
  const seconds = now / 1000;
  const tolerance = options.toleranceSeconds ?? 0;
  const { exp, nbf, iat } = claims;
  if (exp === undefined) {
    if (options.requireExp !== false) return false;
  } else if (typeof exp !== 'number' || !Number.isFinite(exp) || exp <= seconds - tolerance) return false;
  if (nbf !== undefined && (typeof nbf !== 'number' || !Number.isFinite(nbf) || nbf > seconds + tolerance))
    return false;
  if (iat !== undefined && (typeof iat !== 'number' || !Number.isFinite(iat))) return false;
  return true;
}

/**
 * Where `checkJwt` finds the key for a token: one key, or a getter by the protected header such as
 * jose's `createLocalJWKSet` and `createRemoteJWKSet` (which stay in charge of fetching, caching
 * and picking the JWK; an error of theirs, a missing kid or an unreachable JWKS, is passed on).
 */
export type JwtKeys = KeyObject | webcrypto.CryptoKey | JWK | JWTVerifyGetKey;

/** Why `checkJwt` refused a token (a claim failure names the claim in `claim`). */
export type JwtRefusal = 'malformed' | 'algorithm' | 'signature' | 'expired' | 'claim';

export class JwtCheckError extends Error {
  override name = 'JwtCheckError';
  constructor(
    readonly code: JwtRefusal,
    message: string,
    readonly claim?: string,
  ) {
    super(message);
  }
}

export interface CheckJwtOptions {
  /** The algorithms accepted (`alg` is checked before any key is looked up). */
  algorithms: readonly string[];
  /** Current time in milliseconds: the caller holds the clock. */
  now: number;
  /** The `typ` the header must carry, compared without `application/` and case (RFC 8725 §3.11). */
  typ?: string;
  /** The accepted `iss` (one of). */
  issuer?: string | readonly string[];
  /** The `aud` that must be among the token's (one of these). */
  audience?: string | readonly string[];
  subject?: string;
  /** Claims that must be present. */
  requiredClaims?: readonly string[];
  /** Leeway for `exp`, `nbf` and the token's age, in seconds. */
  clockToleranceSeconds?: number;
  /** `iat` required and at most this old, in seconds. */
  maxTokenAgeSeconds?: number;
}

const decodeSegment = (segment: string): unknown => JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const normalizeTyp = (typ: string) => typ.toLowerCase().replace(/^application\//, '');

/** A key that a JWKS getter answered with, as the KeyObject the verifier takes. */
function asKeyObject(key: unknown): KeyObject {
  if (key instanceof KeyObject) return key.type === 'public' ? key : createPublicKey(key);
  if (isObject(key) && typeof key['kty'] === 'string') return importPublicJwk(key);
  if (key && typeof key === 'object' && (key as { type?: unknown }).type === 'public')
    return nodeKey(key as webcrypto.CryptoKey);
  throw new JwtCheckError('signature', 'no public key to check the signature with');
}

/**
 * Checks a compact JWT as jose's `jwtVerify` would: `alg` one of `algorithms`, the signature by
 * the key (or the key set's key for the header), no `crit` header, then `typ`, the required
 * claims, `iss`, `sub`, `aud`, `exp`, `nbf` and the token's age against `now`. Throws a
 * `JwtCheckError` (`expired`, `claim` with the claim named, `signature`, `algorithm`, `malformed`),
 * or the key set's own error.
 */
export async function checkJwt(
  token: string,
  keys: JwtKeys,
  options: CheckJwtOptions,
): Promise<DecodedJwt & { input: string }> {
  const verified = await checkJws(token, keys, options);
  checkClaims(verified.header, verified.payload, options);
  return verified;
}

/**
 * The signature part of `checkJwt` alone, for signed documents without time claims (checkpoints,
 * ratings): `alg` one of `algorithms`, the signature by the key or the key set's key, no `crit`
 * header, a JSON object as payload. `input` is the signed `header.payload` as received.
 */
export async function checkJws(
  token: string,
  keys: JwtKeys,
  options: Pick<CheckJwtOptions, 'algorithms'>,
): Promise<DecodedJwt & { input: string }> {
  const parts = typeof token === 'string' ? token.split('.') : [];
  if (parts.length !== 3) throw new JwtCheckError('malformed', 'not a compact JWS');
  let header: unknown;
  try {
    header = decodeSegment(parts[0]!);
  } catch {
    throw new JwtCheckError('malformed', 'the JWS header is not JSON');
  }
  if (!isObject(header)) throw new JwtCheckError('malformed', 'the JWS header is not a JSON object');
  const alg = header['alg'];
  if (typeof alg !== 'string' || !options.algorithms.includes(alg))
    throw new JwtCheckError('algorithm', `alg must be one of ${options.algorithms.join(', ')}`);
  const key =
    typeof keys === 'function'
      ? await keys(header as Parameters<JWTVerifyGetKey>[0], {
          protected: parts[0]!,
          payload: parts[1]!,
          signature: parts[2]!,
        })
      : keys;
  let verified: DecodedJwt & { input: string };
  try {
    verified = verifyJwt(token, asKeyObject(key), { alg });
  } catch (error) {
    if (error instanceof JwtCheckError) throw error;
    const code = (error as { code?: unknown }).code;
    if (code === 'FAST_JWT_MALFORMED' || code === 'FAST_JWT_INVALID_PAYLOAD')
      throw new JwtCheckError('malformed', 'the JWS payload is not a JSON object');
    throw new JwtCheckError('signature', 'the signature does not verify');
  }
  return verified;
}

function checkClaims(header: Record<string, unknown>, claims: Record<string, unknown>, options: CheckJwtOptions): void {
  const refuse = (claim: string, message: string): never => {
    throw new JwtCheckError('claim', message, claim);
  };
  if (options.typ !== undefined) {
    const typ = header['typ'];
    if (typeof typ !== 'string' || normalizeTyp(typ) !== normalizeTyp(options.typ))
      refuse('typ', `typ must be ${options.typ}`);
  }
  for (const claim of options.requiredClaims ?? [])
    if (!(claim in claims)) refuse(claim, `the ${claim} claim is missing`);
  const list = (value: string | readonly string[]) => (typeof value === 'string' ? [value] : value);
  if (options.issuer !== undefined && !list(options.issuer).includes(claims['iss'] as string))
    refuse('iss', 'unexpected iss');
  if (options.subject !== undefined && claims['sub'] !== options.subject) refuse('sub', 'unexpected sub');
  if (options.audience !== undefined) {
    const aud = claims['aud'];
    const given = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
    if (!list(options.audience).some((one) => given.includes(one))) refuse('aud', 'unexpected aud');
  }
  const seconds = Math.floor(options.now / 1000);
  const tolerance = options.clockToleranceSeconds ?? 0;
  const numeric = (claim: string) => {
    const value = claims[claim];
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value)))
      refuse(claim, `${claim} must be a number`);
    return value as number | undefined;
  };
  const iat = numeric('iat');
  const nbf = numeric('nbf');
  const exp = numeric('exp');
  if (nbf !== undefined && nbf > seconds + tolerance) refuse('nbf', 'the token is not yet valid (nbf)');
  if (exp !== undefined && exp <= seconds - tolerance)
    throw new JwtCheckError('expired', 'the token has expired', 'exp');
  if (options.maxTokenAgeSeconds !== undefined) {
    if (iat === undefined) refuse('iat', 'the iat claim is missing');
    const age = seconds - iat!;
    if (age - tolerance > options.maxTokenAgeSeconds)
      throw new JwtCheckError('expired', 'the token is too old (iat)', 'iat');
    if (age < -tolerance) refuse('iat', 'iat lies in the future');
  }
}
