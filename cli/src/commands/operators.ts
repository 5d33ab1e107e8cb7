import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
  role?: string;
}

const ROLES = ['operator', 'auditor'];

/** `keyplane operators grant USERNAME [--role operator|auditor]` (docs/console.md#who). */
export async function grantOperator(ref: string, options: Options): Promise<void> {
  const role = options.role ?? 'operator';
  if (!ROLES.includes(role)) throw new CliError('--role must be operator or auditor', EXIT.usage);
  const api = adminApi(options.controlPlane);
  progress(`granting ${role} to ${ref} at ${api.base}`);
  const done = await api.call('POST', '/admin/operators', `cannot grant ${role} to ${ref}`, { account: ref, role });
  say(
    options.json
      ? JSON.stringify(done)
      : `${String(done['username'])} (${String(done['identityId'])}) is now ${role}, receipt ${String(done['receipt'])}`,
  );
}

/** `keyplane operators revoke USERNAME`: the last operator's role is refused (409 last_operator). */
export async function revokeOperator(ref: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`revoking the console role of ${ref} at ${api.base}`);
  const done = await api.call('DELETE', `/admin/operators/${encodeURIComponent(ref)}`, `cannot revoke ${ref}`);
  say(
    options.json
      ? JSON.stringify(done)
      : `${String(done['username'])} (${String(done['identityId'])}) holds no console role now, receipt ${String(done['receipt'])}`,
  );
}

/** `keyplane operators list`: one line per account with a role. */
export async function listOperators(options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  progress(`listing operators and auditors at ${api.base}`);
  const { operators } = (await api.call('GET', '/admin/operators', 'cannot list operators')) as {
    operators: Array<{ username: string; identityId: string; role: string; grantedAt: string }>;
  };
  if (options.json) return say(JSON.stringify({ operators }));
  for (const o of operators) say(`${o.role}\t${o.username}\t${o.identityId}\t${o.grantedAt}`);
}

export function operatorsCommands(program: Command): void {
  const operators = program
    .command('operators')
    .description(
      "Grant, revoke or list console roles (operator, auditor) through a running control plane's admin API (token from KEYPLANE_ADMIN_TOKEN).",
    );
  const common = (command: Command) =>
    command
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
  common(
    operators
      .command('grant')
      .description(
        'Grant a console role; every other operator is mailed. Exit 0 done, 1 refused, 2 usage or network error.',
      )
      .argument('<account>', 'username or identity id')
      .option('--role <role>', 'operator (changes) or auditor (reads and exports)', 'operator'),
  ).action((ref: string, options: Options) => withJsonRefusals(options.json, () => grantOperator(ref, options), say));
  common(
    operators
      .command('revoke')
      .description(
        'Revoke a console role; the last operator is refused (409 last_operator). Exit 0 done, 1 refused, 2 usage or network error.',
      )
      .argument('<account>', 'username or identity id'),
  ).action((ref: string, options: Options) => withJsonRefusals(options.json, () => revokeOperator(ref, options), say));
  common(operators.command('list').description('List the accounts holding a console role.')).action(
    (options: Options) => withJsonRefusals(options.json, () => listOperators(options), say),
  );
}
