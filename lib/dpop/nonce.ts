import { createHmac } from 'node:crypto';
import { constantEquals } from '../crypto/constant-equals.js';

/**
 * Server-issued DPoP nonces (RFC 9449 §8, §9) without server state: a nonce is
 * `<window>.<mac>`, where `window` counts fixed periods since the epoch and `mac` is
 * HMAC-SHA-256(key, "keyplane:dpop-nonce:v1" | audience | window), base64url.
 *
 * - Unpredictable without the key, as §8 requires; every replica holding the key accepts it.
 * - `audience` separates nonces of different servers (the token endpoint and each resource), so
 *   a nonce from one is refused at another (§9).
 * - A nonce is accepted in its own window and the one after, so it lives between one and two
 *   windows; clients fetch a new one on `use_dpop_nonce` or from any `DPoP-Nonce` header.
 * - The window also carries server time, bounding how long a pre-made proof stays usable even
 *   when the client's clock (and so its `iat`) is wrong.
 */
export interface DpopNonceOptions {
  /** At least 32 random bytes, shared by the replicas (derive it from the master key). */
  key: Uint8Array;
  audience: string;
  /** Milliseconds since the epoch. */
  now: number;
  /** Length of a window (default 300 s). */
  windowSeconds?: number;
}

const DEFAULT_WINDOW_SECONDS = 300;

function mac(key: Uint8Array, audience: string, window: number): string {
  return createHmac('sha256', key).update(`keyplane:dpop-nonce:v1\u0000${audience}\u0000${window}`).digest('base64url');
}

function windowOf(now: number, windowSeconds: number): number {
  return Math.floor(now / (windowSeconds * 1000));
}

/** The nonce to send in `DPoP-Nonce` now. */
export function issueDpopNonce(options: DpopNonceOptions): string {
  if (options.key.length < 32) throw new Error('a DPoP nonce key needs at least 32 bytes');
  const window = windowOf(options.now, options.windowSeconds ?? DEFAULT_WINDOW_SECONDS);
  return `${window}.${mac(options.key, options.audience, window)}`;
}

/** True when `nonce` was issued for this audience in the current or the previous window. */
export function checkDpopNonce(nonce: string, options: DpopNonceOptions): boolean {
  const match = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(nonce);
  if (!match) return false;
  const window = Number(match[1]);
  const current = windowOf(options.now, options.windowSeconds ?? DEFAULT_WINDOW_SECONDS);
  if (window !== current && window !== current - 1) return false;
  return constantEquals(mac(options.key, options.audience, window), match[2]!);
}
