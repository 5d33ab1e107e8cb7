import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';
import { dataDirOptions, flagsToConfig } from '../options.js';

export function backupCommand(program: Command): void {
  dataDirOptions(
    program
      .command('backup')
      .description(
        'Copy the database while the server runs: SQLite through its online backup API, PostgreSQL through pg_dump (custom format). Keys stay encrypted; keep the master key separately.',
      ),
  )
    .requiredOption('--out <file>', 'file to write the backup to')
    .action(async (options: Record<string, unknown> & { out: string }) => {
      const [
        { loadControlPlaneConfig },
        { assertDatabaseExists, backupSqliteDatabase, describeDatabase, sqliteFileOf },
      ] = await Promise.all([import('#config/load.js'), import('../../../control-plane/src/operations/database.js')]);
      const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
      if (existsSync(options.out)) throw new CliError(`${options.out} exists; choose a new file`, EXIT.usage);
      // A mistyped --data or --database is refused here: a backup of nothing would look like one.
      await assertDatabaseExists(config);
      if (config.databaseUrl) {
        progress(`backing up ${describeDatabase(config)} with pg_dump …`);
        await pgDump(config.databaseUrl, options.out);
        say(
          `backup written to ${options.out} (pg_dump custom format). Restore into an empty database: pg_restore --no-owner --exit-on-error --single-transaction --dbname <url> ${options.out} (docs/operations.md#restoring-a-backup)`,
        );
        return;
      }
      const file = sqliteFileOf(config)!;
      progress(`backing up ${file} …`);
      const { pages } = await backupSqliteDatabase(config, options.out);
      say(
        `backup written to ${options.out} (${pages} pages). Restore: stop the control plane, copy it to ${file} and remove ${file}-wal and ${file}-shm (docs/operations.md#restoring-a-backup)`,
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
