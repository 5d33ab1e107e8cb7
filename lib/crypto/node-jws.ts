import { createPublicKey, KeyObject, sign, verify, type JsonWebKey, type webcrypto } from 'node:crypto';

/** The asymmetric JWS algorithms signed and checked here (RFC 7518 §3.4, RFC 8037 §3.1). */
export type NodeJwsAlg = 'ES256' | 'EdDSA';

const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/;
const fromCryptoKey = new WeakMap<object, KeyObject>();

/**
 * The node:crypto KeyObject of a key, remembered per WebCrypto key. node:crypto signs and
 * verifies synchronously on the calling thread; WebCrypto goes through the thread pool for every
 * call, which costs more than the elliptic-curve arithmetic itself on a hot path.
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

/** A public JWK (EC P-256 or OKP Ed25519) as a KeyObject; throws when it is not a valid key. */
export function importPublicJwk(jwk: Record<string, unknown>): KeyObject {
  // node:crypto would quietly derive the public key from a private JWK; a public key is expected.
  if ('d' in jwk) throw new TypeError('a private JWK where a public key is expected');
  const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  if (key.type !== 'public') throw new TypeError('not a public key');
  return key;
}

/** Signs `header` and `payload` (JSON) as a compact JWS (RFC 7515 §7.1); `alg` is set from the argument. */
export function signCompactJws(
  header: Record<string, unknown>,
  payload: Record<string, unknown> | Uint8Array,
  key: KeyObject | webcrypto.CryptoKey,
  alg: NodeJwsAlg,
): string {
  const encodedHeader = Buffer.from(JSON.stringify({ ...header, alg })).toString('base64url');
  const body = payload instanceof Uint8Array ? Buffer.from(payload) : Buffer.from(JSON.stringify(payload));
  const input = `${encodedHeader}.${body.toString('base64url')}`;
  const signature =
    alg === 'ES256'
      ? sign('sha256', Buffer.from(input), { key: nodeKey(key), dsaEncoding: 'ieee-p1363' })
      : sign(null, Buffer.from(input), nodeKey(key));
  return `${input}.${signature.toString('base64url')}`;
}

/** A compact JWS split once: its parsed header and the parts the signature covers. */
export interface SplitJws {
  header: Record<string, unknown>;
  /** The base64url header and payload joined by a dot: what the signature covers. */
  signingInput: string;
  /** The base64url payload. */
  payload: string;
  /** The base64url signature. */
  signature: string;
}

/**
 * Splits a compact JWS (RFC 7515 §7.1) and parses its header, or null when it is not three
 * base64url parts or its header is not a JSON object. Verifiers that must look at the header
 * first (the key to check with may come from it) read it here once, then call `verifySplitJws`.
 */
export function splitCompactJws(jws: string): SplitJws | null {
  if (typeof jws !== 'string' || !COMPACT.test(jws)) return null;
  const first = jws.indexOf('.');
  const second = jws.indexOf('.', first + 1);
  const encodedHeader = jws.slice(0, first);
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(encodedHeader, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return null;
  return {
    header: header as Record<string, unknown>,
    signingInput: jws.slice(0, second),
    payload: jws.slice(first + 1, second),
    signature: jws.slice(second + 1),
  };
}

/**
 * Checks a split JWS made with `alg` by `key` and returns its payload bytes, or null when
 * anything is off: another `alg`, a `crit` header (no extension is understood here, RFC 7515
 * §4.1.11), an unencoded payload, or a bad signature.
 */
export function verifySplitJws(jws: SplitJws, key: KeyObject, alg: NodeJwsAlg): Buffer | null {
  const { header } = jws;
  if (header.alg !== alg || 'crit' in header || header.b64 === false) return null;
  const signature = Buffer.from(jws.signature, 'base64url');
  // ES256 in JWS is the raw r || s (RFC 7518 §3.4); Ed25519 signatures are 64 bytes too.
  if (signature.length !== 64) return null;
  const data = Buffer.from(jws.signingInput);
  let good: boolean;
  try {
    good =
      alg === 'ES256'
        ? verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature)
        : verify(null, data, key, signature);
  } catch {
    return null;
  }
  return good ? Buffer.from(jws.payload, 'base64url') : null;
}

/**
 * Checks a compact JWS made with `alg` by `key` and returns its header and payload bytes, or
 * null when anything is off (`splitCompactJws`, then `verifySplitJws`).
 */
export function verifyCompactJws(
  jws: string,
  key: KeyObject,
  alg: NodeJwsAlg,
): { header: Record<string, unknown>; payload: Buffer } | null {
  const split = splitCompactJws(jws);
  const payload = split && verifySplitJws(split, key, alg);
  return payload ? { header: split.header, payload } : null;
}
