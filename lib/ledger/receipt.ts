import { sha256, sha256Hex } from '../crypto/sha256.js';
import { canonicalJson } from './canonical-json.js';

/** The tag prefixed to a receipt hash to derive its tree key (docs/ledger.md). */
export const RECEIPT_KEY_TAG = 'keyplane:receipt:v1';

/** A receipt: small, flat JSON. `kind`, `at` (RFC 3339) and `outcome` are always there. */
export interface Receipt {
  kind: string;
  at: string;
  outcome: string;
  [field: string]: unknown;
}

const HASH_HEX = /^[0-9a-f]{64}$/;

/** True for a receipt address: lower-case hex SHA-256, 64 characters. */
export function isReceiptHash(value: string): boolean {
  return HASH_HEX.test(value);
}

/** The receipt's address: lower-case hex SHA-256 of its RFC 8785 canonical JSON (UTF-8). */
export function hashReceipt(receipt: unknown): string {
  return canonicalReceipt(receipt).hash;
}

/** The receipt's RFC 8785 canonical JSON and its address, the hash of exactly that text (one serialization for both). */
export function canonicalReceipt(receipt: unknown): { body: string; hash: string } {
  const body = canonicalJson(receipt);
  return { body, hash: sha256Hex(body) };
}

/**
 * The receipt's tree key `SHA-256("keyplane:receipt:v1" || receipt-hash-bytes)`: the tag as
 * ASCII bytes followed by the 32 raw bytes of the hash. Only keys enter a tree, so no proof
 * ever reveals a look-up hash.
 */
export function treeKeyOf(receiptHash: string | Uint8Array): Buffer {
  const bytes = typeof receiptHash === 'string' ? hexBytes(receiptHash, 'receipt hash') : receiptHash;
  if (bytes.length !== 32) throw new TypeError('a receipt hash is 32 bytes');
  return sha256(Buffer.concat([Buffer.from(RECEIPT_KEY_TAG, 'ascii'), bytes]));
}

/** Decodes lower-case hex of even length; throws on anything else. */
function hexBytes(hex: string, what = 'value'): Buffer {
  if (!/^(?:[0-9a-f]{2})*$/.test(hex)) throw new TypeError(`${what} is not lower-case hex`);
  return Buffer.from(hex, 'hex');
}
