import type { Command } from 'commander';
import { dataDirOptions, flagsToConfig } from '../options.js';
import { progress, say } from '../io.js';

export function migrateCommand(program: Command): void {
  dataDirOptions(
    program
      .command('migrate')
      .description(
        'Apply pending schema migrations to the SQLite data directory or the PostgreSQL database, then exit. Safe to run while other replicas start (an advisory lock serializes them); refuses a database newer than this release.',
      ),
  ).action(async (options: Record<string, unknown>) => {
    const [{ loadControlPlaneConfig }, { describeStorage, migrateStorage }] = await Promise.all([
      import('../../../config/load.js'),
      import('../../../control-plane/src/storage/open-storage.js'),
    ]);
    const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
    progress(`migrating ${describeStorage(config)}`);
    const { from, to } = await migrateStorage(config);
    say(
      from === to
        ? `schema already at version ${to}; nothing to apply`
        : `schema migrated from version ${from} to ${to}`,
    );
  });
}
