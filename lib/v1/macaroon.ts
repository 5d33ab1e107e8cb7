import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * First-party macaroons (Birgisson et al., NDSS 2014) for the deprecated v1 session token, built
 * as libmacaroons builds them so that any macaroon library verifies ours: the signature key is
 * `HMAC("macaroons-key-generator" zero-padded to 32 bytes, rootKey)`, then
 * `sig0 = HMAC(key, identifier)` and `sig_i = HMAC(sig_{i-1}, caveat_i)`. Serialised as the v2
 * JSON form (`{v: 2, l, i, c: [{i}], s64}`) in base64url. Third-party caveats are never issued,
 * so any macaroon carrying one is refused.
 */
export interface Macaroon {
  location?: string;
  identifier: string;
  caveats: string[];
}

const KEY_GENERATOR = Buffer.concat([
  Buffer.from('macaroons-key-generator'),
  Buffer.alloc(32 - 'macaroons-key-generator'.length),
]);
const MAX_TOKEN = 4096;

function hmac(key: Uint8Array, data: string | Uint8Array): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

function sign(rootKey: Uint8Array, identifier: string, caveats: readonly string[]): Buffer {
  let signature = hmac(hmac(KEY_GENERATOR, rootKey), identifier);
  for (const caveat of caveats) signature = hmac(signature, caveat);
  return signature;
}

export function mintMacaroon(rootKey: Uint8Array, macaroon: Macaroon): string {
  const json = {
    v: 2,
    ...(macaroon.location ? { l: macaroon.location } : {}),
    i: macaroon.identifier,
    c: macaroon.caveats.map((caveat) => ({ i: caveat })),
    s64: sign(rootKey, macaroon.identifier, macaroon.caveats).toString('base64url'),
  };
  return Buffer.from(JSON.stringify(json)).toString('base64url');
}

/**
 * The macaroon, when its signature chain verifies under `rootKey` (compared in constant time)
 * and it has first-party caveats only; null for anything else. Caveat predicates are the
 * caller's: a verified macaroon only says which caveats were attached.
 */
export function verifyMacaroon(rootKey: Uint8Array, token: string): Macaroon | null {
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN || !/^[A-Za-z0-9_-]+$/.test(token))
    return null;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!json || typeof json !== 'object') return null;
  const { v, l, i, c, s64 } = json as Record<string, unknown>;
  if (v !== 2 || typeof i !== 'string' || typeof s64 !== 'string' || !Array.isArray(c)) return null;
  if (l !== undefined && typeof l !== 'string') return null;
  const caveats: string[] = [];
  for (const caveat of c) {
    if (!caveat || typeof caveat !== 'object') return null;
    const { i: id, ...rest } = caveat as Record<string, unknown>;
    // A `v64`/`l` member makes a third-party caveat, which this issuer never adds.
    if (typeof id !== 'string' || Object.keys(rest).length > 0) return null;
    caveats.push(id);
  }
  const expected = sign(rootKey, i, caveats);
  const given = Buffer.from(s64, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  return { ...(l ? { location: l } : {}), identifier: i, caveats };
}
