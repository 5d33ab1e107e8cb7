import type { Command } from 'commander';
import { dataDirOptions, flagsToConfig } from '../options.js';
import { say } from '../io.js';

/** The config and the key operations, loaded when a keys command runs (so `--help` stays light). */
async function keyOperations(options: Record<string, unknown>) {
  const [{ loadControlPlaneConfig }, operations] = await Promise.all([
    import('#config/load.js'),
    import('../../../control-plane/src/operator-tasks/keys.js'),
  ]);
  return { config: loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) }), ...operations };
}

export function keysCommand(program: Command): void {
  const keys = program.command('keys').description('Manage the ES256 signing key ring.');
  dataDirOptions(
    keys
      .command('rotate')
      .description(
        'Retire the current key, start signing with the published next key, publish a new next key. Running servers pick it up within 10 s.',
      ),
  ).action(async (options: Record<string, unknown>) => {
    const { config, rotateSigningKeys } = await keyOperations(options);
    const result = await rotateSigningKeys(config);
    say(
      `rotated: ${result.current} now signs; ${result.next} is published as next; ${result.retired} retired (still published for verification)`,
    );
  });
  dataDirOptions(keys.command('list').description('List the published keys with their states.')).action(
    async (options: Record<string, unknown>) => {
      const { config, listSigningKeys } = await keyOperations(options);
      for (const key of await listSigningKeys(config)) say(`${key.kid}  ${key.current ? 'current' : 'published'}`);
    },
  );
}
