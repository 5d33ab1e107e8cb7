import type { Command } from 'commander';
import { adminApi, withJsonRefusals } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
  session?: string;
}

/** `keyplane sessions revoke <account>`: ends the account's live sessions (or one) and the grants they started. */
export async function revokeSessionsCommand(ref: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  if (ref.trim() === '') throw new CliError('name the account by identity id or username', EXIT.usage);
  progress(
    `revoking ${options.session ? `session ${options.session} of` : 'every live session of'} ${ref} at ${api.base}`,
  );
  const done = await api.call(
    'POST',
    `/admin/accounts/${encodeURIComponent(ref)}/sessions/revoke`,
    `cannot revoke the sessions of ${ref}`,
    options.session ? { session: options.session } : {},
  );
  if (options.json) return say(JSON.stringify(done));
  const revoked = done['revoked'] as string[];
  say(`${String(done['username'])} (${String(done['identityId'])}): ${revoked.length} session(s) revoked`);
  for (const [i, id] of revoked.entries()) say(`  ${id} receipt ${String((done['receipts'] as string[])[i] ?? '-')}`);
}

export function sessionsCommands(program: Command): void {
  const sessions = program
    .command('sessions')
    .description('Operator actions on sessions through the admin API (token from KEYPLANE_ADMIN_TOKEN).');
  sessions
    .command('revoke')
    .description(
      "End an account's live sessions, or only --session ID, with the grants they started. Exit 0 done, 1 refused (unknown account or session), 2 usage or network error.",
    )
    .argument('<account>', 'identity id (usr_…) or username')
    .option('--session <id>', 'only this session (its identifier as the account page shows it)')
    .option('--control-plane <url>', 'base URL (issuer) of the control plane')
    .option('--json', 'print the result (or the refusal) as one JSON object')
    .action((ref: string, options: Options) =>
      withJsonRefusals(options.json, () => revokeSessionsCommand(ref, options), say),
    );
}
