import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Derives the 32-byte AES key from the operator's master key. Any string of at least
 * 32 characters is accepted; HKDF makes the strength of the key independent of its encoding.
 */
export function deriveMasterKey(masterKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', masterKey, 'keyplane', 'keyplane:at-rest:v1', 32));
}

/**
 * AES-256-GCM with a fresh 96-bit IV. `context` is bound as additional data so a ciphertext
 * moved to another row (another key id, another client) fails to open.
 */
export function seal(key: Buffer, plaintext: Uint8Array, context: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
}

export function open(key: Buffer, sealed: Uint8Array, context: string): Buffer {
  const box = Buffer.from(sealed);
  if (box.length < 1 + IV_BYTES + TAG_BYTES || box[0] !== VERSION) {
    throw new Error('sealed box has an unknown format');
  }
  const iv = box.subarray(1, 1 + IV_BYTES);
  const tag = box.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(box.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]);
}
