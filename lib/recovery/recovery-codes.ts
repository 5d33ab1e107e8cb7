import { createHmac, randomBytes } from 'node:crypto';
import { constantEquals } from '../crypto/constant-equals.js';

/**
 * Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or copied from paper has
 * no look-alikes. 32 symbols = 5 bits each; 16 symbols = 80 bits per code.
 */
export const RECOVERY_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const RECOVERY_CODE_COUNT = 10;
export const RECOVERY_CODE_SYMBOLS = 16;
export const RECOVERY_CODE_GROUP = 4;

/** Turns 10 bytes (80 bits) into 16 base32 symbols. */
function encode80(bytes: Buffer): string {
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let out = '';
  for (let i = RECOVERY_CODE_SYMBOLS - 1; i >= 0; i--) out += RECOVERY_ALPHABET[Number((bits >> BigInt(i * 5)) & 31n)];
  return out;
}

function group(symbols: string): string {
  return symbols.match(new RegExp(`.{1,${RECOVERY_CODE_GROUP}}`, 'g'))!.join('-');
}

/** Ten fresh codes for display, each `XXXX-XXXX-XXXX-XXXX` with 80 random bits. */
export function generateRecoveryCodes(count = RECOVERY_CODE_COUNT): string[] {
  const codes = new Set<string>();
  while (codes.size < count) codes.add(group(encode80(randomBytes(10))));
  return [...codes];
}

/**
 * Canonical form of what a person typed: case, spaces and hyphens ignored, and the look-alikes
 * Crockford's base32 folds (O→0, I and L→1). Null when it cannot be a code at all.
 */
export function normalizeRecoveryCode(input: string): string | null {
  const folded = input
    .toUpperCase()
    .replace(/[\s-]+/g, '')
    .replace(/O/g, '0')
    .replace(/[IL]/g, '1');
  if (folded.length !== RECOVERY_CODE_SYMBOLS) return null;
  for (const c of folded) if (!RECOVERY_ALPHABET.includes(c)) return null;
  return folded;
}

/**
 * What is stored: HMAC-SHA-256 of the normalized code under a server key derived from the master
 * key, as hex. With 80 random bits a slow hash adds nothing an attacker could not already
 * brute-force, while the key means a copy of the database alone cannot test guesses offline.
 */
export function hashRecoveryCode(key: Uint8Array, normalized: string): string {
  return createHmac('sha256', key).update(`keyplane:recovery:v1:${normalized}`).digest('hex');
}

/**
 * Finds which stored hash (if any) the typed code matches. Every candidate is compared in
 * constant time, and all of them are compared, so the answer's timing tells nothing.
 */
export function matchRecoveryCode<T extends { codeHash: string }>(
  key: Uint8Array,
  input: string,
  candidates: readonly T[],
): T | null {
  const normalized = normalizeRecoveryCode(input);
  const hash = hashRecoveryCode(key, normalized ?? '');
  let found: T | null = null;
  for (const candidate of candidates) {
    if (constantEquals(candidate.codeHash, hash) && normalized !== null && found === null) found = candidate;
  }
  return found;
}
