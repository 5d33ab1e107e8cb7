import { randomBytes, randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;

/**
 * `bytes` bytes from the CSPRNG, encoded, taken from a buffer refilled with `randomFillSync` a
 * page at a time, as node's own `randomUUID` does: one call into OpenSSL per few hundred tokens,
 * ids and receipt nonces instead of one each (the token endpoint takes several per request).
 * Every byte is handed out once, and only as a string, so refilling in place is safe.
 */
function fromPool(bytes: number, encoding: BufferEncoding): string {
  if (poolOffset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = pool.toString(encoding, poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return out;
}

/** A URL-safe random token carrying `bytes` bytes of entropy (default 256 bits). */
export function randomToken(bytes = 32, encoding: 'base64url' | 'base64' = 'base64url'): string {
  return bytes > POOL_BYTES ? randomBytes(bytes).toString(encoding) : fromPool(bytes, encoding);
}

/** A prefixed opaque identifier such as `agt_…` (128 bits of entropy). */
export function randomId(prefix: string, bytes = 16): string {
  return `${prefix}_${randomToken(bytes)}`;
}

/** `bytes` bytes (at most 4096) from the CSPRNG as lower-case hex, from the same pool. */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES)
    throw new RangeError(`randomHex takes 1 to ${POOL_BYTES} bytes`);
  return fromPool(bytes, 'hex');
}
