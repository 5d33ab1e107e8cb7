import type { Command } from 'commander';
import { flagsToConfig, serverOptions } from '../options.js';
import { serveUntilSignal } from '../io.js';

export function gatewayCommand(program: Command): void {
  serverOptions(
    program
      .command('gateway')
      .description('Run the edge-gate: forward-auth reverse proxy in front of an upstream app.'),
    'gateway',
  )
    .option('--public-url <url>', 'public URL of the gateway (default: the listening URL)')
    .option('--control-plane <url>', 'base URL (issuer) of the control plane (default http://localhost:4400)')
    .option('--upstream <url>', 'URL of the protected app')
    .option('--client-id <id>', "the gateway's OIDC client id at the control plane")
    .option('--client-secret <secret>', "the gateway's client secret (also KEYPLANE_GATEWAY_CLIENT_SECRET)")
    .option(
      '--trusted-proxies <cidrs>',
      'comma-separated addresses whose forwarded headers are believed (default loopback)',
    )
    .option('--redis <url>', 'Redis URL for shared state (also KEYPLANE_REDIS_URL)')
    .action(async (options: Record<string, unknown>) => {
      const { loadGatewayConfig } = await import('../../../config/load.js');
      const config = loadGatewayConfig({ flags: flagsToConfig('gateway', options) });
      const { startGateway } = await import('../../../gateway/src/server.js');
      await serveUntilSignal(await startGateway(config, { logStream: process.stderr }));
    });
}
