import { timingSafeEqual } from 'node:crypto';
import { sha256 } from './sha256.js';

/**
 * Compares two secrets in constant time. Both sides are hashed first so that
 * neither the content nor the length of the expected value leaks through timing.
 */
export function constantEquals(a: string | Uint8Array, b: string | Uint8Array): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/**
 * Compares two public digests (a DPoP `ath`, a JWK thumbprint) without an early exit on the
 * first differing byte. Nothing secret is compared, so neither side is hashed again first, as
 * `constantEquals` does to hide a secret's length.
 */
export function equalDigests(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
