import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Command } from 'commander';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';
import { dataDirOptions, flagsToConfig } from '../options.js';
import { assertNewPath, writePrivateFile } from '../private-file.js';

export function backupCommand(program: Command): void {
  dataDirOptions(
    program
      .command('backup')
      .description(
        'Copy the database while the server runs: SQLite through its online backup API, PostgreSQL through pg_dump (custom format), into a new file of mode 0600. Keys stay encrypted; restoring needs the same master key: keep it separately.',
      ),
  )
    .requiredOption('--out <file>', 'file to write the backup to (mode 0600; never an existing file or a link)')
    .action(async (options: Record<string, unknown> & { out: string }) => {
      const [
        { loadControlPlaneConfig },
        { assertDatabaseExists, backupSqliteDatabase, describeDatabase, sqliteFileOf },
      ] = await Promise.all([
        import('#config/load.js'),
        import('../../../control-plane/src/operator-tasks/database.js'),
      ]);
      const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
      assertNewPath(options.out);
      // A mistyped --data or --database is refused here: a backup of nothing would look like one.
      await assertDatabaseExists(config);
      // docs/operations.md#backups: the file holds every secret hash and sealed key, so it is
      // written privately and linked into place, never through a link or over a file.
      let summary: string;
      let written: { createdDir: string | null };
      if (config.databaseUrl) {
        progress(`backing up ${describeDatabase(config)} with pg_dump …`);
        written = await writePrivateFile(options.out, (temporary) => pgDump(config.databaseUrl!, temporary));
        summary = `backup written to ${options.out} (pg_dump custom format). Restore into an empty database: pg_restore --no-owner --exit-on-error --single-transaction --dbname <url> ${options.out} (docs/operations.md#restoring-a-backup)`;
      } else {
        const file = sqliteFileOf(config)!;
        progress(`backing up ${file} …`);
        let pages = 0;
        written = await writePrivateFile(options.out, async (temporary) => {
          pages = (await backupSqliteDatabase(config, temporary)).pages;
        });
        summary = `backup written to ${options.out} (${pages} pages). Restore: keyplane restore ${options.out} --out <new data directory> (docs/operations.md#restoring-a-backup)`;
      }
      if (written.createdDir) progress(`created the directory ${written.createdDir} (mode 0700)`);
      say(summary);
      say(
        config.masterKey
          ? 'Restoring needs this same master key (KEYPLANE_MASTER_KEY): keep it in your secret store, apart from the backup.'
          : `Restoring needs this same master key, the dev key ${join(config.dataDir, 'master.key')}: keep a copy apart from the backup (keyplane restore --master-key-file).`,
      );
    });
}

/** pg_dump takes a consistent snapshot while replicas keep writing; the URL goes by environment, not argv. */
function pgDump(url: string, out: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const { password, ...rest } = splitPassword(url);
    const child = spawn('pg_dump', ['--format=custom', '--no-owner', `--file=${out}`, `--dbname=${rest.url}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) },
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'ENOENT'
          ? new CliError(
              'pg_dump is not installed or not on PATH; install the PostgreSQL client tools (Debian: postgresql-client) matching the server version',
              EXIT.failed,
            )
          : error,
      );
    });
    child.on('close', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new CliError(`pg_dump failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`, EXIT.failed),
        );
    });
  });
}

function splitPassword(url: string): { url: string; password: string } {
  const parsed = new URL(url);
  const password = decodeURIComponent(parsed.password);
  parsed.password = '';
  return { url: parsed.toString(), password };
}
