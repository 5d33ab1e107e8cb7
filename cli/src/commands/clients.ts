import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
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
      "List, show, rotate the secret of, or revoke OIDC clients through a running control plane's admin API (token from KEYPLANE_ADMIN_TOKEN). Exit 0 done, 1 refused, 2 usage or network error.",
    );
  const common = (command: Command) =>
    command
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
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
