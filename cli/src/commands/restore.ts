import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

/** What a data directory must not hold for a restore into it: a store, or a master key. */
const STORE_FILES = ['keyplane.db', 'keyplane.db-wal', 'keyplane.db-shm', 'master.key'];

export function restoreCommand(program: Command): void {
  program
    .command('restore')
    .description(
      'Restore a SQLite backup into a new data directory, after checking that the master key opens its keys (PostgreSQL: pg_restore, docs/operations.md#restoring-a-backup).',
    )
    .argument('<backup>', 'the file `keyplane backup` wrote')
    .requiredOption('--out <dir>', 'the data directory to restore into (created when missing; must hold no store)')
    .option(
      '--master-key-file <file>',
      'the dev key (master.key) of the data directory the backup came from, when KEYPLANE_MASTER_KEY was not set; copied beside the restored store',
    )
    .option('--config <file>', 'YAML config file (for masterKey)')
    .action(async (backup: string, options: { out: string; masterKeyFile?: string; config?: string }) => {
      const [{ loadControlPlaneConfig }, { checkSqliteBackup, installSqliteBackup }] = await Promise.all([
        import('#config/load.js'),
        import('../../../control-plane/src/operator-tasks/restore.js'),
      ]);
      const config = loadControlPlaneConfig({
        flags: { dataDir: options.out, ...(options.config ? { config: options.config } : {}) },
      });
      if (!existsSync(backup) || !statSync(backup).isFile())
        throw new CliError(`there is no backup file at ${backup}`, EXIT.usage);
      const missing = inspectDataDir(options.out);
      if (config.masterKey && options.masterKeyFile)
        throw new CliError('give the master key once: KEYPLANE_MASTER_KEY or --master-key-file, not both', EXIT.usage);
      const masterKey = options.masterKeyFile ? readKeyFile(options.masterKeyFile) : config.masterKey;
      if (!masterKey)
        throw new CliError(
          'restoring needs the master key the backup was taken with: set KEYPLANE_MASTER_KEY, or pass --master-key-file <the old data directory>/master.key',
          EXIT.usage,
        );
      const keySource = options.masterKeyFile ? `the key in ${options.masterKeyFile}` : 'KEYPLANE_MASTER_KEY';
      // Checked before anything is written: a wrong key is named, and no directory is left behind.
      const checked = checkSqliteBackup(backup, masterKey);
      if (!checked.ok && checked.problem === 'not_a_store')
        throw new CliError(
          `${backup} is not a Keyplane SQLite backup (a PostgreSQL dump restores with pg_restore)`,
          EXIT.usage,
        );
      if (!checked.ok)
        throw new CliError(
          `${keySource} does not open the backup's signing key ${checked.kid}: it is not the master key the backup was taken with; nothing was restored`,
          EXIT.usage,
        );
      if (missing) mkdirSync(options.out, { recursive: true, mode: 0o700 });
      const installed = installSqliteBackup(backup, options.out, options.masterKeyFile);
      if (missing) progress(`created the data directory ${options.out} (mode 0700)`);
      say(`restored ${backup} into ${installed.database}; ${keySource} opens its ${checked.keys} signing key(s).`);
      say(
        installed.keyFile
          ? `Start it with: keyplane control-plane --data ${options.out} (its master key is ${installed.keyFile}, the one the backup was taken with)`
          : `Start it with the same KEYPLANE_MASTER_KEY: keyplane control-plane --data ${options.out}`,
      );
    });
}

function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    throw new CliError(`cannot read the master key file ${file}`, EXIT.usage);
  }
}

/** Whether the data directory is missing (to be created once the key is checked); refuses a file or a directory holding a store. */
function inspectDataDir(dir: string): boolean {
  if (!existsSync(dir)) return true;
  if (!statSync(dir).isDirectory()) throw new CliError(`${dir} is not a directory`, EXIT.usage);
  const present = readdirSync(dir).filter((name) => STORE_FILES.includes(name));
  if (present.length > 0)
    throw new CliError(`${dir} already holds ${present.join(', ')}; restore into a new data directory`, EXIT.usage);
  return false;
}
