import { randomBytes, randomFillSync } from 'node:crypto';

/** A URL-safe random token carrying `bytes` bytes of entropy (default 256 bits). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A prefixed opaque identifier such as `agt_…` (128 bits of entropy). */
export function randomId(prefix: string, bytes = 16): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

/**
 * `bytes` bytes (at most 4096) from the CSPRNG as lower-case hex, taken from a buffer refilled
 * with `randomFillSync` a page at a time, as node's own `randomUUID` does: one call into
 * OpenSSL per 256 receipt nonces instead of one each. Every byte is handed out once.
 */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES) throw new RangeError(`randomHex takes 1 to ${POOL_BYTES} bytes`);
  if (poolOffset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return out;
}
