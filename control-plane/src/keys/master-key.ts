import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { deriveMasterKey } from '#lib/crypto/sealed-box.js';

export const DEV_MASTER_KEY_FILE = 'master.key';

export interface MasterKeyResult {
  key: Buffer;
  /** Set when a dev key file was generated or read instead of KEYPLANE_MASTER_KEY. */
  devKeyFile?: string;
  created?: boolean;
}

/**
 * The operator's master key, or a generated dev key kept in the data dir with mode 0600.
 * A dev key protects nothing from someone who can read the data dir: the caller warns.
 */
export function resolveMasterKey(masterKey: string | undefined, dataDir: string): MasterKeyResult {
  if (masterKey) return { key: deriveMasterKey(masterKey) };
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = join(dataDir, DEV_MASTER_KEY_FILE);
  let created = false;
  if (!existsSync(file)) {
    try {
      writeFileSync(file, randomBytes(32).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
      created = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return { key: deriveMasterKey(readFileSync(file, 'utf8').trim()), devKeyFile: file, created };
}
