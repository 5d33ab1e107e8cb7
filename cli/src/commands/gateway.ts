import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { flagsToConfig, serverOptions } from '../options.js';
import { progress, say } from '../io.js';
import { serveWithWorkers } from '../serve.js';

interface ExplainOptions {
  controlPlane?: string;
  clientId?: string;
  user?: string;
  path?: string;
  json?: boolean;
}

/**
 * `keyplane gateway explain --client-id ID --user NAME --path /x` (docs/gateway.md#explaining-a-decision):
 * asks the control plane's admin API whether the gateway's access rules admit the account on the
 * path, and prints the decision and the rule that decided.
 */
export async function explainCommand(options: ExplainOptions): Promise<void> {
  if (!options.clientId || !options.user || !options.path)
    throw new CliError('--client-id, --user and --path are required', EXIT.usage);
  if (!options.path.startsWith('/')) throw new CliError('--path must start with /', EXIT.usage);
  const api = adminApi(options.controlPlane);
  progress(`asking ${api.base} about ${options.user} on ${options.path}`);
  const query = new URLSearchParams({ user: options.user, path: options.path });
  const answer = await api.call(
    'GET',
    `/admin/gateways/${encodeURIComponent(options.clientId)}/explain?${query}`,
    `cannot explain ${options.path} for ${options.user}`,
  );
  if (options.json) return say(JSON.stringify(answer));
  const route = answer['route'] as { path: string; rules: string[] } | null;
  say(`${String(answer['decision']).toUpperCase()}: ${String(answer['because'])}`);
  say(
    route
      ? `route ${route.path} admits ${route.rules.join('; ')}`
      : 'no route matches this path: any signed-in account passes',
  );
  say(
    `account ${String(answer['username'])} (${String(answer['identityId'])}), config version ${String(answer['configVersion'])}`,
  );
}

/**
 * `keyplane gateway rules --client-id ID` (docs/gateway.md#seeing-the-rules): each route of the
 * gateway client's policy and who passes it, in words, from the control plane's admin API.
 */
export async function rulesCommand(options: ExplainOptions): Promise<void> {
  if (!options.clientId) throw new CliError('--client-id is required', EXIT.usage);
  const api = adminApi(options.controlPlane);
  progress(`asking ${api.base} for the rules of ${options.clientId}`);
  const answer = await api.call(
    'GET',
    `/admin/gateways/${encodeURIComponent(options.clientId)}/rules`,
    `cannot read the rules of ${options.clientId}`,
  );
  if (options.json) return say(JSON.stringify(answer));
  const signIn = answer['signIn'] as string[] | null;
  say(`sign-in: ${signIn ? `only ${signIn.join('; or ')}` : 'any account'}`);
  for (const route of answer['routes'] as Array<{ path: string; rules: string[] }>)
    say(`${route.path}: ${route.rules.join('; or ')}`);
}

export function gatewayCommand(program: Command): void {
  const gateway = serverOptions(
    program.command('gateway').description('Run the gateway: forward-auth reverse proxy in front of an upstream app.'),
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
    .option(
      '--data <dir>',
      "this gateway's own state directory (also KEYPLANE_DATA_DIR; default ./data/gateways/<client id>)",
    )
    .action(async (options: Record<string, unknown>) => {
      const [{ loadGatewayConfig }, { ConfigError }] = await Promise.all([
        import('#config/load.js'),
        import('#config/config-error.js'),
      ]);
      const config = loadGatewayConfig({ flags: flagsToConfig('gateway', options) });
      // docs/gateway.md: without its credentials a gateway can never get a signed config, and
      // would listen answering 503 gateway_not_configured to everyone; it refuses to start instead.
      const missing = [
        ...(config.clientId ? [] : ["clientId is not set: the gateway's client id at the control plane (--client-id)"]),
        ...(config.clientSecret
          ? []
          : [
              "clientSecret is not set: the gateway client's secret (KEYPLANE_GATEWAY_CLIENT_SECRET or --client-secret)",
            ]),
      ];
      if (missing.length > 0) throw new ConfigError(missing);
      const [{ startGateway }, { redisTopologyOf }] = await Promise.all([
        import('../../../gateway/src/server.js'),
        import('#lib/runtime/shared-state/index.js'),
      ]);
      await serveWithWorkers({
        workers: config.workers,
        host: config.host,
        port: config.port,
        usesRedis: redisTopologyOf(config) !== null,
        single: () => startGateway(config),
        // The primary saves the signed config and signs the evidence; workers serve.
        primary: (port, state) => startGateway({ ...config, port }, { role: 'primary', ...(state ? { state } : {}) }),
        worker: (state) => startGateway(config, { role: 'worker', ...(state ? { state } : {}) }),
      });
    });
  gateway
    .command('explain')
    .description(
      "Say whether a gateway client's access rules admit an account on a path, and which rule decided (admin API; token from KEYPLANE_ADMIN_TOKEN). Exit 0 answered, 1 refused, 2 usage or network error.",
    )
    .option('--user <name>', 'identity id (usr_…) or username')
    .option('--path <path>', 'the request path, e.g. /admin/users')
    .option('--json', 'print the answer (or the refusal) as one JSON object')
    // --client-id and --control-plane are the gateway command's own options, read from there.
    .action((_options: ExplainOptions, command: Command) => {
      const options = command.optsWithGlobals<ExplainOptions>();
      return withJsonRefusals(options.json, () => explainCommand(options), say);
    });
  gateway
    .command('rules')
    .description(
      'Print who passes each route of a gateway client, in words (admin API; token from KEYPLANE_ADMIN_TOKEN). Exit 0 answered, 1 refused, 2 usage or network error.',
    )
    .option('--json', 'print the answer (or the refusal) as one JSON object')
    .action((_options: ExplainOptions, command: Command) => {
      const options = command.optsWithGlobals<ExplainOptions>();
      return withJsonRefusals(options.json, () => rulesCommand(options), say);
    });
}
