import { createPublicKey, KeyObject, type JsonWebKey, type webcrypto } from 'node:crypto';
import { createDecoder, createSigner, createVerifier } from 'fast-jwt';

/**
 * Hot-path JWT signing and checking through fast-jwt, which signs and verifies with node:crypto
 * on the calling thread (WebCrypto, as jose uses it, queues every call on the thread pool, which
 * costs more than the elliptic-curve arithmetic itself). jose stays for keys, JWKS and JWE.
 */

/** The asymmetric JWS algorithms signed and checked here (RFC 7518 §3.4, RFC 8037 §3.1). */
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
  alg: JwtAlgorithm;
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
      algorithms: [options.alg],
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
