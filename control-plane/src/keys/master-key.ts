import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { deriveMasterKey, open } from '#lib/crypto/sealed-box.js';

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

/** The master key does not open the store's keys: a setup problem, stopped at start with what to do. */
export class MasterKeyError extends Error {
  override name = 'MasterKeyError';
}

/** Where a master key came from, as a message names it. */
export function describeMasterKey(result: Pick<MasterKeyResult, 'devKeyFile'>): string {
  return result.devKeyFile ? `the dev key ${result.devKeyFile}` : 'KEYPLANE_MASTER_KEY';
}

/** The kid of the first sealed signing key `key` cannot open (AES-GCM refuses another key), or null. */
export function findKeyNotOpened(
  key: Buffer,
  sealedKeys: ReadonlyArray<{ kid: string; sealedPrivateJwk: Uint8Array }>,
): string | null {
  for (const sealed of sealedKeys) {
    try {
      open(key, sealed.sealedPrivateJwk, `signing-key:${sealed.kid}`);
    } catch {
      return sealed.kid;
    }
  }
  return null;
}

/**
 * Stops a start (or an operator's task) on a store whose keys another master key sealed, naming
 * the key in use and removing a dev key generated just now: a restored data directory without its
 * key must never get a fresh `master.key` beside it (docs/operations.md#restoring-a-backup).
 */
export function assertMasterKeyOpens(
  master: MasterKeyResult,
  sealedKeys: ReadonlyArray<{ kid: string; sealedPrivateJwk: Uint8Array }>,
): void {
  const kid = findKeyNotOpened(master.key, sealedKeys);
  if (kid === null) return;
  if (master.created && master.devKeyFile) {
    rmSync(master.devKeyFile, { force: true });
    throw new MasterKeyError(
      `this store's keys were sealed with a master key that is not here (KEYPLANE_MASTER_KEY is not set and there was no ${DEV_MASTER_KEY_FILE}): start with the master key the data was written with (KEYPLANE_MASTER_KEY, or its ${DEV_MASTER_KEY_FILE} in the data directory)`,
    );
  }
  throw new MasterKeyError(
    `${describeMasterKey(master)} does not open this store's signing key ${kid}: it is not the master key the data was written with; start with that one (docs/operations.md#restoring-a-backup)`,
  );
}
