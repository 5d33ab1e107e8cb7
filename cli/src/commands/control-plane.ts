import type { Command } from 'commander';
import { loadControlPlaneConfig } from '../../../config/load.js';
import { startControlPlane } from '../../../control-plane/src/server.js';
import { flagsToConfig } from '../options.js';
import { progress, runUntilSignal, say, warn } from '../io.js';

export function controlPlaneCommand(program: Command): void {
  program
    .command('control-plane')
    .description('Run the control plane: OIDC provider, accounts, ledger (embedded storage in the data dir).')
    .option('--config <file>', 'YAML config file (also KEYPLANE_CONFIG)')
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--port <port>', 'port to listen on; 0 picks a free one (default 4400)')
    .option('--data <dir>', 'data directory (default ./data, also KEYPLANE_DATA_DIR)')
    .option('--issuer <url>', 'public base URL and OIDC issuer (also KEYPLANE_ISSUER)')
    .option('--redis <url>', 'Redis URL for shared state (also KEYPLANE_REDIS_URL)')
    .action(async (options: Record<string, unknown>) => {
      const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
      const running = await startControlPlane(config, { warn, notify: progress, logStream: process.stderr });
      say(`listening ${running.url}`);
      await runUntilSignal(() => running.close());
    });
}
