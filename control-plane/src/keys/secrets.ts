import { hkdfSync } from 'node:crypto';
import { open, seal } from '#lib/crypto/sealed-box.js';

/**
 * Secrets at rest under the master key. `seal`/`open` are AES-256-GCM with `context` bound as
 * additional data (a TOTP secret sealed for one account does not open for another);
 * `macKey(purpose)` derives a separate HMAC key per purpose (recovery codes), so no key is ever
 * used for two jobs.
 */
export interface SecretsService {
  seal(context: string, plaintext: string | Uint8Array): Buffer;
  open(context: string, sealed: Uint8Array): Buffer;
  macKey(purpose: string): Buffer;
}

export function createSecrets(masterKey: Buffer): SecretsService {
  const macKeys = new Map<string, Buffer>();
  return {
    seal: (context, plaintext) =>
      seal(masterKey, typeof plaintext === 'string' ? Buffer.from(plaintext) : plaintext, context),
    open: (context, sealed) => open(masterKey, sealed, context),
    macKey(purpose) {
      let key = macKeys.get(purpose);
      if (!key) {
        key = Buffer.from(hkdfSync('sha256', masterKey, 'keyplane', `keyplane:mac:${purpose}:v1`, 32));
        macKeys.set(purpose, key);
      }
      return key;
    },
  };
}
