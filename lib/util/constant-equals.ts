import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Compares two secrets in constant time. Both sides are hashed first so that
 * neither the content nor the length of the expected value leaks through timing.
 */
export function constantEquals(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}
