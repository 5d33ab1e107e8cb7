import { join } from 'node:path';
import type { Command } from 'commander';
import { defaultPublicUrl, findFreePort } from '#lib/runtime/listen.js';
import { CliError, EXIT } from '../exit.js';
import { humanLogStream } from '../human-log.js';
import { flagsToConfig } from '../options.js';
import { progress, runUntilSignal, say, warn } from '../io.js';

const DEFAULT_GATEWAY_PORT = 4480;
const DEFAULT_DEMO_PORT = 4490;
/** Tries at starting the demo app and gateway when a port chosen for port 0 was taken meanwhile. */
const AUTO_PORT_ATTEMPTS = 3;

export function upCommand(program: Command): void {
  program
    .command('up')
    .description('Run the control plane, a gateway and a demo app behind it, with embedded storage in the data dir.')
    .option(
      '--config <file>',
      "the control plane's YAML config file, as for keyplane control-plane (also KEYPLANE_CONFIG)",
    )
    .option('--host <host>', 'address to listen on (default 127.0.0.1)')
    .option('--port <port>', 'control plane port (default 4400)')
    .option('--gateway-port <port>', `gateway port (default ${DEFAULT_GATEWAY_PORT})`)
    .option('--demo-port <port>', `demo app port (default ${DEFAULT_DEMO_PORT})`)
    .option('--data <dir>', 'data directory (default ./data)')
    .action(async (options: Record<string, unknown>) => {
      const { loadControlPlaneConfig, loadGatewayConfig } = await import('#config/load.js');
      // The control plane reads its configuration exactly as `keyplane control-plane` does (file,
      // KEYPLANE_* variables, flags); the gateway and demo app are derived from it below.
      const config = loadControlPlaneConfig({
        flags: flagsToConfig('control-plane', {
          config: options['config'],
          host: options['host'],
          port: options['port'],
          data: options['data'],
        }),
      });
      const gatewayPortOption = portOption(options['gatewayPort'], '--gateway-port', DEFAULT_GATEWAY_PORT);
      const demoPortOption = portOption(options['demoPort'], '--demo-port', DEFAULT_DEMO_PORT);
      // The servers load only once the flags are known good: a usage error answers at once.
      const [
        { IN_PLACE_DEMO_PATH, DEMO_POLICY, ensureInPlaceDemoClient, ensureDemoGatewayClient },
        { startControlPlane },
        { startGateway },
        { startDemoApp },
      ] = await Promise.all([
        import('../demo/demo-clients.js'),
        import('../../../control-plane/src/server.js'),
        import('../../../gateway/src/server.js'),
        import('../demo/demo-app.js'),
      ]);
      // Notices (the founder setup link) wait for the summary, so each is shown once, after the URLs.
      const notices: string[] = [];
      const controlPlane = await startControlPlane(config, {
        warn,
        notify: (line) => notices.push(line),
        logStream: humanLogStream(process.stderr, 'control plane'),
      });
      const closers: Array<() => Promise<void>> = [() => controlPlane.close()];
      const closeAll = async () => {
        for (const close of closers.reverse()) await close();
      };
      for (let attempt = 1; ; attempt++) {
        // The gateway's redirect URI is registered before it starts, so its port is fixed first;
        // so is the demo app's: the in-place example on it is registered with its origins.
        const gatewayPort = await resolvePort(gatewayPortOption, config.host);
        const demoPort = await resolvePort(demoPortOption, config.host);
        const started: Array<() => Promise<void>> = [];
        try {
          const gatewayUrl = defaultPublicUrl(config.host, gatewayPort);
          const inPlaceOrigins = demoOrigins(config.host, demoPort);
          const inPlaceClient = await ensureInPlaceDemoClient(controlPlane.services, { origins: inPlaceOrigins });
          const demo = await startDemoApp({
            port: demoPort,
            host: config.host,
            gatewayUrl,
            inPlace: { issuer: controlPlane.url, clientId: inPlaceClient.clientId },
          });
          started.push(() => demo.close());
          const inPlaceUrl = `${inPlaceOrigins[0]}${IN_PLACE_DEMO_PATH}`;
          const client = await ensureDemoGatewayClient(controlPlane.services, { gatewayUrl, policy: DEMO_POLICY });
          // Not from KEYPLANE_CONFIG or the environment: those configure the control plane (a control
          // plane's file is not a gateway's), and this gateway is the try-out's, set up from it.
          const gatewayConfig = loadGatewayConfig({
            env: {},
            overrides: {
              host: config.host,
              port: gatewayPort,
              controlPlane: controlPlane.url,
              upstream: demo.url,
              clientId: client.clientId,
              clientSecret: client.clientSecret,
              dataDir: join(config.dataDir, 'gateway'),
              logLevel: config.logLevel,
            },
          });
          const gateway = await startGateway(gatewayConfig, { logStream: humanLogStream(process.stderr, 'gateway') });
          started.push(() => gateway.close());
          closers.push(...started);

          say(`listening ${controlPlane.url}`);
          say(`listening ${gateway.url}`);
          say(`listening ${demo.url}`);
          progress(
            upSummary(
              { controlPlane: controlPlane.url, gateway: gateway.url, demo: demo.url, inPlace: inPlaceUrl },
              notices,
              client,
            ),
          );
          break;
        } catch (error) {
          for (const close of started.reverse()) await close();
          // A port found free for port 0 can be taken by another program before it is bound: choose again.
          const autoPorts = gatewayPortOption === 0 || demoPortOption === 0;
          if (autoPorts && attempt < AUTO_PORT_ATTEMPTS && isAddressInUse(error)) continue;
          await closeAll();
          throw error;
        }
      }
      await runUntilSignal(closeAll);
    });
}

/** What a person reads after `npm start`: where to go, each URL once, then the one-time notices. */
export function upSummary(
  urls: { controlPlane: string; gateway: string; demo: string; inPlace?: string },
  notices: string[],
  client: { clientId: string; created: boolean },
): string {
  return [
    '',
    'Keyplane is up.',
    `  Open ${urls.gateway}/ : the demo app behind the gateway. Sign up or sign in with a passkey when asked;`,
    '  /admin there asks for a step-up, /public needs no sign-in.',
    `  Control plane (OIDC provider, accounts): ${urls.controlPlane}/auth`,
    `  Demo app without the gateway (what the gateway forwards to): ${urls.demo}/`,
    ...(urls.inPlace
      ? [`  Sign in without leaving the page (popup, FedCM, passkey on the page): ${urls.inPlace}`]
      : []),
    ...notices.map((line) => `  ${line}`),
    `  Gateway client ${client.clientId} ${client.created ? 'registered' : 'found'}; its secret was issued for this run only.`,
    'Only warnings and errors are logged here; Ctrl-C stops all three.',
    '',
  ].join('\n');
}

function portOption(raw: unknown, flag: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new CliError(`${flag} must be a port number from 0 to 65535`, EXIT.usage);
  return port;
}

/**
 * The origins the in-place example is registered for: the issuer's host name first (on a loopback
 * host `localhost`, the passkeys' RP ID, so the direct grant works without related origins), and
 * on loopback also `127.0.0.1`, a second site where browsers offer FedCM beside a `localhost` IdP.
 */
export function demoOrigins(host: string, port: number): string[] {
  const primary = defaultPublicUrl(host, port);
  return primary.startsWith('http://localhost:') ? [primary, `http://127.0.0.1:${port}`] : [primary];
}

/** Port 0 asks the OS for a free port now, so the redirect URI can name it before the gateway binds. */
async function resolvePort(port: number, host: string): Promise<number> {
  return port === 0 ? findFreePort(host) : port;
}

function isAddressInUse(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';
}
