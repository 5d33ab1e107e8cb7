import { randomInt } from 'node:crypto';

/** No 0/O, 1/I/L, nor U/V pairs that read alike: a code survives being read aloud and typed. */
export const OWNER_CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTWXYZ23456789';
const LENGTH = 8;

/** A fresh code of 8 characters (about 39 bits) shown as `XXXX-XXXX`. */
export function generateOwnerCode(): string {
  let code = '';
  for (let i = 0; i < LENGTH; i++) code += OWNER_CODE_ALPHABET[randomInt(OWNER_CODE_ALPHABET.length)];
  return formatOwnerCode(code);
}

/** `ABCD2345` → `ABCD-2345`. */
export function formatOwnerCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * What a person typed, in canonical `XXXX-XXXX` form: case, spaces and the dash are forgiven;
 * null when it cannot be a code (wrong length or a character outside the alphabet).
 */
export function normalizeOwnerCode(input: string): string | null {
  const bare = input.toUpperCase().replace(/[\s-]/g, '');
  if (bare.length !== LENGTH) return null;
  for (const ch of bare) if (!OWNER_CODE_ALPHABET.includes(ch)) return null;
  return formatOwnerCode(bare);
}
