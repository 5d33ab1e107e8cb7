import { constantEquals } from '../crypto/constant-equals.js';
import { sha256Hex } from '../crypto/sha256.js';

/**
 * RFC 6749 §2.3.1 `client_secret_basic`: the client id and secret are each
 * application/x-www-form-urlencoded, then joined with ":" and base64-encoded. Returns null
 * for anything else (another scheme, bad base64, no colon, an empty id).
 */
export function parseClientSecretBasic(
  authorization: string | undefined,
): { clientId: string; clientSecret: string } | null {
  if (authorization === undefined) return null;
  const match = /^Basic +([A-Za-z0-9+/]+={0,2})$/i.exec(authorization.trim());
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  try {
    const clientId = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
    const clientSecret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
    return clientId === '' ? null : { clientId, clientSecret };
  } catch {
    return null;
  }
}

/** The `Authorization` value for `client_secret_basic` (RFC 6749 §2.3.1), the inverse of parseClientSecretBasic. */
export function formatClientSecretBasic(clientId: string, clientSecret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

/** SHA-256 (hex) of a client secret: what the client store keeps. */
export function hashClientSecret(secret: string): string {
  return sha256Hex(secret);
}

/** Constant-time check of a presented secret against the stored hash. */
export function verifyClientSecret(presented: unknown, storedHash: string | null): boolean {
  if (typeof presented !== 'string' || storedHash === null || !/^[0-9a-f]{64}$/.test(storedHash)) return false;
  return constantEquals(hashClientSecret(presented), storedHash);
}
