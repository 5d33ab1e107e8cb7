import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { DATABASE_FILE, backupDatabase } from '../../../control-plane/src/storage/sqlite/database.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

export function backupCommand(program: Command): void {
  program
    .command('backup')
    .description('Copy the embedded database while the server runs (SQLite online backup). Keys stay encrypted; keep the master key separately.')
    .requiredOption('--data <dir>', 'data directory of the control plane')
    .requiredOption('--out <file>', 'file to write the backup to')
    .action(async (options: { data: string; out: string }) => {
      if (!existsSync(join(options.data, DATABASE_FILE))) throw new CliError(`no Keyplane database in ${options.data}`, EXIT.usage);
      if (existsSync(options.out)) throw new CliError(`${options.out} exists; choose a new file`, EXIT.usage);
      progress(`backing up ${join(options.data, DATABASE_FILE)} …`);
      const { pages } = await backupDatabase(options.data, options.out);
      say(`backup written to ${options.out} (${pages} pages). Restore: stop the server, copy it to ${join(options.data, DATABASE_FILE)}.`);
    });
}
