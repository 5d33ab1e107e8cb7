import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { readAdminToken } from '#config/env.js';
import { Refused, adminApi, requestJson, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
}

type Client = Record<string, unknown>;

function line(client: Client): string {
  const name = client['client_name'] ? ` "${String(client['client_name'])}"` : '';
  const gateway = client['gateway'] ? `, gateway ${String((client['gateway'] as { mode: string }).mode)}` : '';
  return `${String(client['client_id'])}${name} (${String(client['client_type'])}, revision ${String(client['revision'])}${gateway})`;
}

function requireId(clientId: string): string {
  if (clientId.trim() === '' || clientId.length > 200)
    throw new CliError('name the client by its client_id', EXIT.usage);
  return clientId;
}

/** `keyplane clients list`: every client, page by page, one line each (or one JSON object with all of them). */
export async function listClients(options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  const clients: Client[] = [];
  let after: string | null = null;
  do {
    progress(`listing clients at ${api.base}${after ? ` after ${after}` : ''}`);
    const page = await api.call(
      'GET',
      `/admin/clients?limit=200${after ? `&after=${encodeURIComponent(after)}` : ''}`,
      'cannot list clients',
    );
    clients.push(...(page['clients'] as Client[]));
    after = (page['next'] as string | null) ?? null;
  } while (after);
  if (options.json) return say(JSON.stringify({ ok: true, clients }));
  for (const client of clients) say(line(client));
  progress(`${clients.length} client(s)`);
}

export async function showClient(clientId: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`looking up client ${requireId(clientId)} at ${api.base}`);
  const found = await api.call('GET', `/admin/clients/${encodeURIComponent(clientId)}`, `cannot look up ${clientId}`);
  const client = found['client'] as Client;
  if (options.json) return say(JSON.stringify(found));
  say(line(client));
  say(`  owner: ${String(client['owner'] ?? 'operator')}`);
  say(`  created: ${String(client['created_at'])}`);
  for (const uri of (client['redirect_uris'] as string[] | undefined) ?? []) say(`  redirect_uri: ${uri}`);
  if (client['secret_issued_at']) say(`  secret issued: ${String(client['secret_issued_at'])}`);
}

export async function rotateSecret(clientId: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`rotating the secret of ${requireId(clientId)} at ${api.base}`);
  const done = await api.call(
    'POST',
    `/admin/clients/${encodeURIComponent(clientId)}/rotate-secret`,
    `cannot rotate the secret of ${clientId}`,
  );
  if (options.json) return say(JSON.stringify(done));
  // The secret is the result: it alone goes to stdout, so `$(keyplane clients rotate-secret …)` captures it.
  say(String(done['client_secret']));
  progress(
    `new secret for ${clientId} (revision ${String(done['revision'])}${done['receipt'] ? `, receipt ${String(done['receipt'])}` : ''}); the old one no longer works and this one is not shown again`,
  );
}

interface RegisterOptions extends Options {
  name?: string;
  redirectUri?: string[];
  grantType?: string[];
  scope?: string;
  public?: boolean;
  metadata?: string;
}

/** The RFC 7591 metadata to register: the `--metadata` file, then the flags over it. */
function registrationMetadata(options: RegisterOptions): Record<string, unknown> {
  let metadata: Record<string, unknown> = {};
  if (options.metadata) {
    let text: string;
    try {
      text = readFileSync(options.metadata, 'utf8');
    } catch (error) {
      throw new CliError(`cannot read --metadata ${options.metadata}: ${(error as Error).message}`, EXIT.usage);
    }
    try {
      metadata = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new CliError(`--metadata ${options.metadata} is not JSON`, EXIT.usage);
    }
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
      throw new CliError(`--metadata ${options.metadata} must hold one JSON object (RFC 7591 metadata)`, EXIT.usage);
  }
  return {
    ...metadata,
    ...(options.name ? { client_name: options.name } : {}),
    ...(options.redirectUri?.length ? { redirect_uris: options.redirectUri } : {}),
    ...(options.grantType?.length ? { grant_types: options.grantType } : {}),
    ...(options.scope ? { scope: options.scope } : {}),
    ...(options.public ? { token_endpoint_auth_method: 'none' } : {}),
  };
}

/**
 * `keyplane clients register`: RFC 7591 registration with the admin token. The credentials are the
 * result and are shown this once: they alone go to stdout, one `name: value` line each.
 */
export async function registerClient(options: RegisterOptions): Promise<void> {
  const metadata = registrationMetadata(options);
  if (Object.keys(metadata).length === 0)
    throw new CliError(
      'say what to register: --name, --redirect-uri, --grant-type, --public or --metadata FILE',
      EXIT.usage,
    );
  const api = adminApi(options.controlPlane);
  progress(`registering ${String(metadata['client_name'] ?? 'a client')} at ${api.base}`);
  // RFC 7591 §3.2.1: success is 201 with the client information, a body without the envelope's `ok`.
  const answer = await requestJson('POST', `${api.base}/register`, { token: readAdminToken(), body: metadata });
  if (answer.status !== 201) throw new Refused(answer, 'cannot register the client');
  const done = answer.body;
  if (options.json) return say(JSON.stringify(done));
  for (const field of ['client_id', 'client_secret', 'registration_access_token'])
    if (typeof done[field] === 'string') say(`${field}: ${String(done[field])}`);
  progress(
    `registered ${String(done['client_id'])}${done['receipt'] ? `, receipt ${String(done['receipt'])}` : ''}; the secret and the registration access token are not shown again`,
  );
}

export async function revokeClient(clientId: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`revoking ${requireId(clientId)} at ${api.base}`);
  const done = await api.call(
    'POST',
    `/admin/clients/${encodeURIComponent(clientId)}/revoke`,
    `cannot revoke ${clientId}`,
  );
  if (options.json) return say(JSON.stringify(done));
  say(`revoked ${clientId}${done['receipt'] ? `, receipt ${String(done['receipt'])}` : ''}`);
}

export function clientsCommands(program: Command): void {
  const clients = program
    .command('clients')
    .description(
      "Register, list, show, rotate the secret of, or revoke OIDC clients through a running control plane's admin API (token from KEYPLANE_ADMIN_TOKEN). Exit 0 done, 1 refused, 2 usage or network error.",
    );
  const common = (command: Command) =>
    command
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
  const collect = (value: string, previous: string[] = []) => [...previous, value];
  common(
    clients
      .command('register')
      .description(
        'Register a client (RFC 7591) and print its client_id, secret and registration access token, shown this once.',
      ),
  )
    .option('--name <name>', 'client_name: the name people see on the consent page')
    .option('--redirect-uri <uri>', 'a redirect URI (repeat for more)', collect)
    .option('--grant-type <type>', 'a grant type (repeat for more; default authorization_code)', collect)
    .option('--scope <scope>', 'the scopes the client may ask for, space-separated')
    .option('--public', 'a public client (token_endpoint_auth_method none: PKCE, no secret)')
    .option('--metadata <file>', 'a JSON file of RFC 7591 metadata; the flags above override its fields')
    .action((options: RegisterOptions) => withJsonRefusals(options.json, () => registerClient(options), say));
  common(
    clients
      .command('list')
      .description('Every registered client, one per line: id, name, type, revision, gateway mode.'),
  ).action((options: Options) => withJsonRefusals(options.json, () => listClients(options), say));
  common(
    clients.command('show').description("One client's registration (never its secret).").argument('<client_id>'),
  ).action((id: string, options: Options) => withJsonRefusals(options.json, () => showClient(id, options), say));
  common(
    clients
      .command('rotate-secret')
      .description('Issue a new secret (printed once on stdout); the old one stops working at once.')
      .argument('<client_id>'),
  ).action((id: string, options: Options) => withJsonRefusals(options.json, () => rotateSecret(id, options), say));
  common(
    clients
      .command('revoke')
      .description('Delete the client: its grants and tokens stop at once.')
      .argument('<client_id>'),
  ).action((id: string, options: Options) => withJsonRefusals(options.json, () => revokeClient(id, options), say));
}
