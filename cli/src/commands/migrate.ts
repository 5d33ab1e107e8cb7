import type { Command } from 'commander';
import { dataDirOptions, flagsToConfig } from '../options.js';
import { progress, say } from '../io.js';

export function migrateCommand(program: Command): void {
  dataDirOptions(
    program
      .command('migrate')
      .description(
        'Apply every missing schema migration to the SQLite data directory or the PostgreSQL database, then exit; creates the database when there is none, and says so. Safe to run while other replicas start (an advisory lock serializes them); refuses a database migrated by a newer release or whose recorded migration changed (exit 2).',
      ),
  ).action(async (options: Record<string, unknown>) => {
    const [{ loadControlPlaneConfig }, { describeDatabase, migrateDatabase }] = await Promise.all([
      import('#config/load.js'),
      import('../../../control-plane/src/operator-tasks/database.js'),
    ]);
    const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
    progress(`migrating ${describeDatabase(config)}`);
    for (const line of await migrateDatabase(config)) say(line);
  });
}
