import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

const ACTIONS = ['show', 'disable', 'enable', 'delete'] as const;
type Action = (typeof ACTIONS)[number];

interface Options {
  controlPlane?: string;
  json?: boolean;
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
  const api = adminApi(options.controlPlane);
  if (ref.trim() === '') throw new CliError('name the account by identity id or username', EXIT.usage);

  progress(`looking up ${ref} at ${api.base}`);
  const found = await api.call('GET', `/admin/accounts/${encodeURIComponent(ref)}`, `cannot look up ${ref}`);
  const identityId = String(found['identityId']);
  let result = found;
  if (action !== 'show') {
    progress(`${action === 'delete' ? 'deleting' : `${action.replace(/e$/, '')}ing`} ${describe(found)}`);
    const path = `/admin/accounts/${encodeURIComponent(identityId)}`;
    const what = `cannot ${action} ${describe(found)}`;
    const done =
      action === 'delete' ? await api.call('DELETE', path, what) : await api.call('POST', `${path}/${action}`, what);
    result = action === 'delete' ? { ...done, username: found['username'] } : done;
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
    .description(
      "Show, disable, enable or delete an account through a running control plane's admin API (token from KEYPLANE_ADMIN_TOKEN).",
    );
  const summaries: Record<Action, string> = {
    show: "Show an account's identity id, username and state.",
    disable: 'Disable an account: it cannot sign in, its sessions end and its grants are revoked.',
    enable: 'Enable a disabled account again.',
    delete: 'Delete an account and everything it holds (receipts keep only its identity id).',
  };
  for (const action of ACTIONS) {
    accounts
      .command(action)
      .description(
        `${summaries[action]} Exit 0 done, 1 refused (unknown account, wrong token), 2 usage or network error.`,
      )
      .argument('<account>', 'identity id (usr_…) or username')
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object')
      .action((ref: string, options: Options) =>
        withJsonRefusals(options.json, () => accountsCommand(action, ref, options), say),
      );
  }
}
