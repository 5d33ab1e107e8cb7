import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
}

interface AddOptions extends Options {
  name?: string;
  issuer?: string;
  clientId?: string;
  privateKeyJwt?: boolean;
  maxAssurance?: string;
}

type Connection = Record<string, unknown>;

function line(c: Connection): string {
  const oidc = (c['oidc'] ?? {}) as Record<string, unknown>;
  const saml = (c['saml'] ?? {}) as Record<string, unknown>;
  const upstream = oidc['issuer'] ?? saml['idp_entity_id'] ?? '';
  return `${String(c['connectionId'])} ${String(c['type'])} "${String(c['name'])}" ${String(upstream)}`;
}

function requireId(connectionId: string): string {
  if (!/^con_[A-Za-z0-9_-]{1,64}$/.test(connectionId))
    throw new CliError('name the connection by its id (con_…)', EXIT.usage);
  return connectionId;
}

/**
 * `keyplane connections add`: an instance-wide OIDC connection (docs/federation.md). The client
 * secret comes from `KEYPLANE_CONNECTION_SECRET`, never a flag (flags land in shell history);
 * `--private-key-jwt` needs none.
 */
export async function addConnection(options: AddOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!options.name || !options.issuer || !options.clientId)
    throw new CliError('give --name, --issuer and --client-id', EXIT.usage);
  const secret = env['KEYPLANE_CONNECTION_SECRET'];
  if (!options.privateKeyJwt && !secret)
    throw new CliError('set KEYPLANE_CONNECTION_SECRET to the client secret, or use --private-key-jwt', EXIT.usage);
  const api = adminApi(options.controlPlane);
  progress(`adding ${options.name} at ${api.base}`);
  const done = await api.call('POST', '/admin/connections', `cannot add ${options.name}`, {
    type: 'oidc',
    name: options.name,
    oidc: {
      issuer: options.issuer,
      client_id: options.clientId,
      ...(options.privateKeyJwt ? { token_endpoint_auth_method: 'private_key_jwt' } : { client_secret: secret }),
    },
    ...(options.maxAssurance ? { max_assurance: options.maxAssurance } : {}),
  });
  if (options.json) return say(JSON.stringify(done));
  say(String(done['connectionId']));
  progress(`register redirect_uri ${String(done['redirect_uri'])} at the identity provider`);
  if (done['jwks_uri']) progress(`and its jwks_uri ${String(done['jwks_uri'])}`);
  if (done['receipt']) progress(`receipt ${String(done['receipt'])}`);
}

export async function listConnections(options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`listing connections at ${api.base}`);
  const found = await api.call('GET', '/admin/connections', 'cannot list connections');
  if (options.json) return say(JSON.stringify(found));
  const connections = found['connections'] as Connection[];
  for (const entry of connections) say(line(entry));
  progress(`${connections.length} connection(s)`);
}

export async function removeConnection(connectionId: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`removing ${requireId(connectionId)} at ${api.base}`);
  const done = await api.call('DELETE', `/admin/connections/${connectionId}`, `cannot remove ${connectionId}`);
  if (options.json) return say(JSON.stringify(done));
  say(`removed ${connectionId}${done['receipt'] ? `, receipt ${String(done['receipt'])}` : ''}`);
}

export function connectionsCommands(program: Command): void {
  const connections = program
    .command('connections')
    .description(
      "Add, list or remove instance-wide connections (upstream identity providers) through a running control plane's admin API (token from KEYPLANE_ADMIN_TOKEN). Exit 0 done, 1 refused, 2 usage or network error.",
    );
  const common = (command: Command) =>
    command
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
  common(
    connections
      .command('add')
      .description(
        'Add an OIDC connection; prints its id (the client secret from KEYPLANE_CONNECTION_SECRET unless --private-key-jwt).',
      )
      .option('--name <name>', 'what the sign-in page calls it')
      .option('--issuer <url>', "the identity provider's issuer (https)")
      .option('--client-id <id>', "Keyplane's client id at the identity provider")
      .option('--private-key-jwt', 'authenticate with a key of the connection (its jwks_uri) instead of a secret')
      .option('--max-assurance <level>', 'email (default) or passkey'),
  ).action((options: AddOptions) => withJsonRefusals(options.json, () => addConnection(options), say));
  common(
    connections
      .command('list')
      .description('Every instance-wide connection: id, type, name, issuer (SAML: the IdP entityID).'),
  ).action((options: Options) => withJsonRefusals(options.json, () => listConnections(options), say));
  common(
    connections.command('remove').description('Remove the connection and its links.').argument('<connection_id>'),
  ).action((id: string, options: Options) => withJsonRefusals(options.json, () => removeConnection(id, options), say));
}
