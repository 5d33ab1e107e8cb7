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

/**
 * Checks a compact JWS made with `alg` by `key` and returns its header and payload bytes, or
 * null when anything is off: not compact, a header that is not a JSON object, another `alg`,
 * a `crit` header (no extension is understood here, RFC 7515 §4.1.11), or a bad signature.
 */
export function verifyCompactJws(
  jws: string,
  key: KeyObject,
  alg: NodeJwsAlg,
): { header: Record<string, unknown>; payload: Buffer } | null {
  if (typeof jws !== 'string' || !COMPACT.test(jws)) return null;
  const [h, p, s] = jws.split('.') as [string, string, string];
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return null;
  const fields = header as Record<string, unknown>;
  if (fields.alg !== alg || 'crit' in fields || fields.b64 === false) return null;
  const signature = Buffer.from(s, 'base64url');
  if (alg === 'ES256' && signature.length !== 64) return null;
  if (alg === 'EdDSA' && signature.length !== 64) return null;
  const data = Buffer.from(`${h}.${p}`);
  let good: boolean;
  try {
    good =
      alg === 'ES256'
        ? verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature)
        : verify(null, data, key, signature);
  } catch {
    return null;
  }
  return good ? { header: fields, payload: Buffer.from(p, 'base64url') } : null;
}
