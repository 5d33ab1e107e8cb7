import type { Command } from 'commander';
import { flagsToConfig, serverOptions } from '../options.js';
import { progress, serveUntilSignal, warn } from '../io.js';

export function controlPlaneCommand(program: Command): void {
  serverOptions(
    program
      .command('control-plane')
      .description('Run the control plane: OIDC provider, accounts, ledger (embedded storage in the data dir).'),
    'control-plane',
  )
    .option('--data <dir>', 'data directory (default ./data, also KEYPLANE_DATA_DIR)')
    .option('--issuer <url>', 'public base URL and OIDC issuer (also KEYPLANE_ISSUER)')
    .option('--redis <url>', 'Redis URL for shared state (also KEYPLANE_REDIS_URL)')
    .action(async (options: Record<string, unknown>) => {
      const { loadControlPlaneConfig } = await import('#config/load.js');
      const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
      // The server loads only when it runs, after a valid configuration: every other command, and a
      // configuration error, answer without fastify and the control plane.
      const { startControlPlane } = await import('../../../control-plane/src/server.js');
      await serveUntilSignal(await startControlPlane(config, { warn, notify: progress }));
    });
}
