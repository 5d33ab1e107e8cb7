import { chmodSync, constants, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { deriveMasterKey } from '#lib/crypto/sealed-box.js';
import { DEV_MASTER_KEY_FILE, findKeyNotOpened } from '../keys/master-key.js';
import { readSqliteBackupKeys } from '../storage/open-storage.js';
import { DATABASE_FILE } from '../storage/sqlite/database.js';

// `keyplane restore` (docs/operations.md#restoring-a-backup): the backup is checked against the
// master key before anything is written, then copied into a new data directory.

export type BackupCheck =
  { ok: true; keys: number } | { ok: false; problem: 'not_a_store' } | { ok: false; problem: 'wrong_key'; kid: string };

/** Whether `file` is a Keyplane SQLite store whose signing keys `masterKey` opens; writes nothing. */
export function checkSqliteBackup(file: string, masterKey: string): BackupCheck {
  const sealed = readSqliteBackupKeys(file);
  if (sealed === null) return { ok: false, problem: 'not_a_store' };
  const kid = findKeyNotOpened(deriveMasterKey(masterKey), sealed);
  return kid === null ? { ok: true, keys: sealed.length } : { ok: false, problem: 'wrong_key', kid };
}

/**
 * Copies a checked backup into `dataDir` (which holds no store) as its database, mode 0600, and
 * the dev key file it was checked with beside it; never over an existing file.
 */
export function installSqliteBackup(
  file: string,
  dataDir: string,
  masterKeyFile?: string,
): { database: string; keyFile?: string } {
  const database = join(dataDir, DATABASE_FILE);
  copyFileSync(file, database, constants.COPYFILE_EXCL);
  chmodSync(database, 0o600);
  if (!masterKeyFile) return { database };
  const keyFile = join(dataDir, DEV_MASTER_KEY_FILE);
  copyFileSync(masterKeyFile, keyFile, constants.COPYFILE_EXCL);
  chmodSync(keyFile, 0o600);
  return { database, keyFile };
}
