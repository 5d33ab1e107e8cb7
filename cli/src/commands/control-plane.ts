import type { Command } from 'commander';
import { flagsToConfig, serverOptions } from '../options.js';
import { progress, warn } from '../io.js';
import { serveWithWorkers } from '../serve.js';

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
    .option('--database <url>', 'PostgreSQL URL (also KEYPLANE_DATABASE_URL); unset uses SQLite in the data directory')
    .action(async (options: Record<string, unknown>) => {
      const { loadControlPlaneConfig } = await import('#config/load.js');
      const config = loadControlPlaneConfig({ flags: flagsToConfig('control-plane', options) });
      // The server loads only when it runs, after a valid configuration: every other command, and a
      // configuration error, answer without fastify and the control plane.
      const [{ startControlPlane, startControlPlanePrimary }, { redisTopologyOf }] = await Promise.all([
        import('../../../control-plane/src/server.js'),
        import('#lib/runtime/shared-state/index.js'),
      ]);
      await serveWithWorkers({
        workers: config.workers,
        host: config.host,
        port: config.port,
        usesRedis: redisTopologyOf(config) !== null,
        single: () => startControlPlane(config, { warn, notify: progress }),
        // The primary migrates the store and runs the sealer, outbox and key schedule: once per instance.
        primary: (port, state) =>
          startControlPlanePrimary({ ...config, port }, { warn, notify: progress, ...(state ? { state } : {}) }),
        worker: (state) => startControlPlane(config, { warn, background: false, ...(state ? { state } : {}) }),
      });
    });
}
