import type { Command } from 'commander';
import { readAdminToken } from '../../../config/load.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

const TIMEOUT_MS = 10_000;
const ACTIONS = ['show', 'disable', 'enable', 'delete'] as const;
type Action = (typeof ACTIONS)[number];

interface Options {
  controlPlane?: string;
  json?: boolean;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** The server refused: the envelope goes to stdout (as JSON with --json) and the exit code is 1. */
class Refused extends CliError {
  constructor(readonly answer: Answer, what: string) {
    super(`${what}: ${String(answer.body['reason'] ?? `HTTP ${answer.status}`)}${answer.body['message'] ? ` (${String(answer.body['message'])})` : ''}`, EXIT.failed);
  }
}

function baseUrl(value: string | undefined): string {
  if (!value) throw new CliError('--control-plane URL is required', EXIT.usage);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError('--control-plane must be a URL', EXIT.usage);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new CliError('--control-plane must be an http(s) URL', EXIT.usage);
  return url.toString().replace(/\/+$/, '');
}

async function call(method: 'GET' | 'POST' | 'DELETE', url: string, token: string): Promise<Answer> {
  let response: Response;
  try {
    response = await fetch(url, { method, signal: AbortSignal.timeout(TIMEOUT_MS), redirect: 'error', headers: { accept: 'application/json', authorization: `Bearer ${token}` } });
  } catch (error) {
    throw new CliError(`cannot reach ${url}: ${(error as Error).message}`, EXIT.usage);
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new CliError(`${url} answered ${response.status} without JSON`, EXIT.usage);
  }
  if (!body || typeof body !== 'object') throw new CliError(`${url} answered ${response.status} with something other than a JSON object`, EXIT.usage);
  return { status: response.status, body: body as Record<string, unknown> };
}

function describe(body: Record<string, unknown>): string {
  return `${String(body['username'])} (${String(body['identityId'])})`;
}

/**
 * `keyplane accounts <action> <account>`: the admin API's account operations against a running
 * control plane. The account is an identity id or a username; it is looked up first, so the
 * operation itself always names the identity id.
 */
export async function accountsCommand(action: Action, ref: string, options: Options): Promise<void> {
  const base = baseUrl(options.controlPlane);
  const token = readAdminToken();
  if (!token) throw new CliError('set KEYPLANE_ADMIN_TOKEN to the control plane\'s admin token', EXIT.usage);
  if (ref.trim() === '') throw new CliError('name the account by identity id or username', EXIT.usage);

  progress(`looking up ${ref} at ${base}`);
  const found = await call('GET', `${base}/admin/accounts/${encodeURIComponent(ref)}`, token);
  if (found.body['ok'] !== true) throw new Refused(found, `cannot look up ${ref}`);
  const identityId = String(found.body['identityId']);
  let result = found.body;
  if (action !== 'show') {
    progress(`${action === 'delete' ? 'deleting' : `${action.replace(/e$/, '')}ing`} ${describe(found.body)}`);
    const path = `${base}/admin/accounts/${encodeURIComponent(identityId)}`;
    const done = action === 'delete' ? await call('DELETE', path, token) : await call('POST', `${path}/${action}`, token);
    if (done.body['ok'] !== true) throw new Refused(done, `cannot ${action} ${describe(found.body)}`);
    result = action === 'delete' ? { ...done.body, username: found.body['username'] } : done.body;
  }
  if (options.json) {
    say(JSON.stringify(result));
    return;
  }
  const receipt = typeof result['receipt'] === 'string' ? `, receipt ${result['receipt']}` : '';
  switch (action) {
    case 'show':
      say(`${describe(result)}: ${String(result['state'])}`);
      break;
    case 'delete':
      say(`deleted ${describe(result)}${receipt}`);
      break;
    default:
      say(`${describe(result)}: ${String(result['state'])}${receipt || ' (unchanged)'}`);
  }
}

export function accountsCommands(program: Command): void {
  const accounts = program
    .command('accounts')
    .description('Show, disable, enable or delete an account through a running control plane\'s admin API (token from KEYPLANE_ADMIN_TOKEN).');
  const summaries: Record<Action, string> = {
    show: 'Show an account\'s identity id, username and state.',
    disable: 'Disable an account: it cannot sign in, its sessions end and its grants are revoked.',
    enable: 'Enable a disabled account again.',
    delete: 'Delete an account and everything it holds (receipts keep only its identity id).',
  };
  for (const action of ACTIONS) {
    accounts
      .command(action)
      .description(`${summaries[action]} Exit 0 done, 1 refused (unknown account, wrong token), 2 usage or network error.`)
      .argument('<account>', 'identity id (usr_…) or username')
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object')
      .action(async (ref: string, options: Options) => {
        try {
          await accountsCommand(action, ref, options);
        } catch (error) {
          if (error instanceof Refused && options.json) say(JSON.stringify(error.answer.body));
          throw error;
        }
      });
  }
}
