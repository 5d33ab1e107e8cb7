import { randomBytes } from 'node:crypto';

/** A URL-safe random token carrying `bytes` bytes of entropy (default 256 bits). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A prefixed opaque identifier such as `agt_…` (128 bits of entropy). */
export function randomId(prefix: string, bytes = 16): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}
