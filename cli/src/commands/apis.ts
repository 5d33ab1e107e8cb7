import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
}

interface AddOptions extends Options {
  resource?: string;
  name?: string;
  scope: string[];
  allowClient: string[];
  allowOrg: string[];
  file?: string;
}

type Api = Record<string, unknown>;

function line(api: Api): string {
  const scopes = (api['scopes'] as Array<{ name: string }>).map((s) => s.name).join(' ');
  return `${String(api['apiId'])} ${String(api['resource'])} "${String(api['name'])}" (${scopes})`;
}

function requireId(apiId: string): string {
  if (!/^api_[A-Za-z0-9_-]{1,64}$/.test(apiId)) throw new CliError('name the API by its id (api_…)', EXIT.usage);
  return apiId;
}

const collect = (value: string, previous: string[]) => [...previous, value];

/**
 * The declaration `keyplane apis add` sends: the JSON `--file` (the POST body as docs/apis.md
 * shows it), or the flags, each `--scope name=description` one scope.
 */
export async function declarationOf(options: AddOptions): Promise<Record<string, unknown>> {
  if (options.file !== undefined) {
    let text: string;
    try {
      text = await readFile(options.file, 'utf8');
    } catch (error) {
      throw new CliError(`cannot read ${options.file}: ${(error as Error).message}`, EXIT.usage);
    }
    try {
      return JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new CliError(`${options.file} is not JSON`, EXIT.usage);
    }
  }
  if (!options.resource || !options.name || options.scope.length === 0)
    throw new CliError('give --resource, --name and at least one --scope name=description (or --file)', EXIT.usage);
  const scopes = options.scope.map((pair) => {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1) throw new CliError(`--scope ${pair} must be name=description`, EXIT.usage);
    return { name: pair.slice(0, eq), description: pair.slice(eq + 1) };
  });
  return {
    resource: options.resource,
    name: options.name,
    scopes,
    ...(options.allowClient.length ? { allowed_clients: options.allowClient } : {}),
    ...(options.allowOrg.length ? { allowed_orgs: options.allowOrg } : {}),
  };
}

export async function addApi(options: AddOptions): Promise<void> {
  const api = adminApi(options.controlPlane);
  const body = await declarationOf(options);
  progress(`declaring ${String(body['resource'])} at ${api.base}`);
  const done = await api.call('POST', '/admin/apis', `cannot declare ${String(body['resource'])}`, body);
  if (options.json) return say(JSON.stringify(done));
  say(String(done['apiId']));
  progress(`declared ${line(done)}${done['receipt'] ? `, receipt ${String(done['receipt'])}` : ''}`);
}

export async function listApis(options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`listing APIs at ${api.base}`);
  const found = await api.call('GET', '/admin/apis', 'cannot list APIs');
  if (options.json) return say(JSON.stringify(found));
  const apis = found['apis'] as Api[];
  for (const entry of apis) say(line(entry));
  progress(`${apis.length} API(s)`);
}

export async function showApi(apiId: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`looking up ${requireId(apiId)} at ${api.base}`);
  const found = await api.call('GET', `/admin/apis/${apiId}`, `cannot look up ${apiId}`);
  if (options.json) return say(JSON.stringify(found));
  say(line(found));
  say(`  owner: ${String(found['org'] ?? 'operator')}`);
  for (const scope of found['scopes'] as Array<{ name: string; description: unknown }>)
    say(
      `  scope ${scope.name}: ${typeof scope.description === 'string' ? scope.description : JSON.stringify(scope.description)}`,
    );
  const clients = found['allowed_clients'] as string[];
  const orgs = found['allowed_orgs'] as string[];
  say(
    `  admits: the owner's own clients${clients.length ? `, ${clients.join(', ')}` : ''}${orgs.length ? `, clients of ${orgs.join(', ')}` : ''}`,
  );
}

export async function removeApi(apiId: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`removing ${requireId(apiId)} at ${api.base}`);
  const done = await api.call('DELETE', `/admin/apis/${apiId}`, `cannot remove ${apiId}`);
  if (options.json) return say(JSON.stringify(done));
  say(`removed ${apiId}${done['receipt'] ? `, receipt ${String(done['receipt'])}` : ''}`);
}

export function apisCommands(program: Command): void {
  const apis = program
    .command('apis')
    .description(
      "Declare, list, show or remove APIs and their scopes through a running control plane's admin API (token from KEYPLANE_ADMIN_TOKEN). Exit 0 done, 1 refused, 2 usage or network error.",
    );
  const common = (command: Command) =>
    command
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
  common(
    apis
      .command('add')
      .description('Declare an API: its resource URI, name and scopes; prints its id.')
      .option('--resource <uri>', 'the resource URI (RFC 8707): the aud of its tokens')
      .option('--name <name>', 'what people call it')
      .option('--scope <name=description>', 'one scope and what it lets an app do (repeat)', collect, [])
      .option('--allow-client <client_id>', 'admit this client besides your own (repeat)', collect, [])
      .option('--allow-org <slug>', "admit this organization's clients (repeat)", collect, [])
      .option('--file <file>', 'the whole declaration as JSON (descriptions per language)'),
  ).action((options: AddOptions) => withJsonRefusals(options.json, () => addApi(options), say));
  common(apis.command('list').description('Every declared API, one per line: id, resource, name, scopes.')).action(
    (options: Options) => withJsonRefusals(options.json, () => listApis(options), say),
  );
  common(apis.command('show').description('One API with its scopes and whom it admits.').argument('<api_id>')).action(
    (id: string, options: Options) => withJsonRefusals(options.json, () => showApi(id, options), say),
  );
  common(
    apis.command('remove').description('Remove the API: its scopes are granted no more.').argument('<api_id>'),
  ).action((id: string, options: Options) => withJsonRefusals(options.json, () => removeApi(id, options), say));
}
