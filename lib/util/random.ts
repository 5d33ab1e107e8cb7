import { randomBytes, randomFillSync } from 'node:crypto';

/**
 * Random bytes are drawn from the CSPRNG a few kilobytes at a time and handed out in slices that
 * are never handed out twice: one `randomBytes` call per token costs a native call and a buffer,
 * and the token endpoint takes several per request. Node's `randomUUID` buffers the same way.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

function take(bytes: number): Buffer {
  if (bytes > 256) return randomBytes(bytes);
  if (offset + bytes > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    offset = 0;
  }
  const slice = pool.subarray(offset, offset + bytes);
  offset += bytes;
  return slice;
}

/** A URL-safe random token carrying `bytes` bytes of entropy (default 256 bits). */
export function randomToken(bytes = 32, encoding: 'base64url' | 'base64' = 'base64url'): string {
  return take(bytes).toString(encoding);
}

/** A prefixed opaque identifier such as `agt_…` (128 bits of entropy). */
export function randomId(prefix: string, bytes = 16): string {
  return `${prefix}_${take(bytes).toString('base64url')}`;
}
