import type { Command } from 'commander';
import { loadControlPlaneConfig } from '../../../config/load.js';
import { startControlPlane } from '../../../control-plane/src/server.js';
import { flagsToConfig } from '../options.js';
import { progress, runUntilSignal, say, warn } from '../io.js';

export function upCommand(program: Command): void {
  program
    .command('up')
    .description('Run everything for a local try-out, with embedded storage in the data dir.')
    .option('--port <port>', 'control plane port (default 4400)')
    .option('--gateway-port <port>', 'gateway port (default 4480)')
    .option('--data <dir>', 'data directory (default ./data)')
    .action(async (options: Record<string, unknown>) => {
      const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', { port: options['port'], data: options['data'] }) });
      const controlPlane = await startControlPlane(config, { warn, notify: progress, logStream: process.stderr });
      say(`listening ${controlPlane.url}`);
      progress(`Keyplane is up. Open ${controlPlane.url}/auth to sign in; discovery at ${controlPlane.url}/.well-known/openid-configuration`);
      await runUntilSignal(() => controlPlane.close());
    });
}
