import { timingSafeEqual } from 'node:crypto';
import { sha256 } from './sha256.js';

/**
 * Compares two secrets in constant time. Both sides are hashed first so that
 * neither the content nor the length of the expected value leaks through timing.
 */
export function constantEquals(a: string | Uint8Array, b: string | Uint8Array): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
