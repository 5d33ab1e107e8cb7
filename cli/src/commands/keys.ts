import type { Command } from 'commander';
import type { KeyRing } from '../../../control-plane/src/keys/key-ring.js';
import { dataDirOptions, flagsToConfig } from '../options.js';
import { say } from '../io.js';

async function withRing<T>(options: Record<string, unknown>, work: (ring: KeyRing) => Promise<T>): Promise<T> {
  const [{ loadControlPlaneConfig }, { KeyRing, rotationPolicy }, { resolveMasterKey }, { openOfflineServices }] =
    await Promise.all([
      import('../../../config/load.js'),
      import('../../../control-plane/src/keys/key-ring.js'),
      import('../../../control-plane/src/keys/master-key.js'),
      import('../../../control-plane/src/services.js'),
    ]);
  const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
  const offline = await openOfflineServices(config);
  try {
    const ring = new KeyRing(
      offline.storage,
      resolveMasterKey(config.masterKey, config.dataDir).key,
      rotationPolicy(config.keys),
    );
    await ring.ensure();
    return await work(ring);
  } finally {
    await offline.close();
  }
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
    const result = await withRing(options, (ring) => ring.rotate());
    say(
      `rotated: ${result.current} now signs; ${result.next} is published as next; ${result.retired} retired (still published for verification)`,
    );
  });
  dataDirOptions(keys.command('list').description('List the published keys with their states.')).action(
    async (options: Record<string, unknown>) => {
      await withRing(options, async (ring) => {
        const current = ring.current().kid;
        for (const key of ring.jwks().keys) say(`${key.kid}  ${key.kid === current ? 'current' : 'published'}`);
      });
    },
  );
}
