import type { Command } from 'commander';
import { adminApi, withJsonRefusals, type AdminApi } from '../admin-api.js';
import { CliError, EXIT } from '../exit.js';
import { progress, say } from '../io.js';

interface Options {
  controlPlane?: string;
  json?: boolean;
  displayName?: string;
}

interface Team {
  name: string;
  displayName: string;
  members: string[];
}

const receiptOf = (body: Record<string, unknown>) =>
  typeof body['receipt'] === 'string' ? `, receipt ${body['receipt']}` : ' (unchanged)';

function teamPath(org: string, team?: string): string {
  if (org.trim() === '') throw new CliError('name the organization by its slug', EXIT.usage);
  if (team !== undefined && team.trim() === '') throw new CliError('name the team by its name (slug)', EXIT.usage);
  return `/org/${encodeURIComponent(org)}/teams${team === undefined ? '' : `/${encodeURIComponent(team)}`}`;
}

/** The account by identity id or username, looked up so the team call names the identity id. */
async function accountOf(api: AdminApi, ref: string): Promise<{ identityId: string; label: string }> {
  if (ref.trim() === '') throw new CliError('name the account by identity id or username', EXIT.usage);
  progress(`looking up ${ref} at ${api.base}`);
  const found = await api.call('GET', `/admin/accounts/${encodeURIComponent(ref)}`, `cannot look up ${ref}`);
  const identityId = String(found['identityId']);
  return { identityId, label: `${String(found['username'])} (${identityId})` };
}

/** `keyplane orgs teams list ORG`: one line per team with its members' identity ids. */
export async function listTeams(org: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  const path = teamPath(org);
  progress(`listing the teams of ${org} at ${api.base}`);
  const found = await api.call('GET', path, `cannot list the teams of ${org}`);
  if (options.json) return say(JSON.stringify(found));
  const teams = found['teams'] as Team[];
  for (const team of teams)
    say(
      `${team.name} "${team.displayName}" ${team.members.length} member(s)${team.members.map((m) => ` ${m}`).join('')}`,
    );
  progress(`${teams.length} team(s)`);
}

/** `keyplane orgs teams create ORG TEAM [--display-name NAME]`: TEAM is the slug, fixed from now on. */
export async function createTeam(org: string, team: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  const path = teamPath(org);
  progress(`creating the team ${org}/${team} at ${api.base}`);
  const done = await api.call('POST', path, `cannot create ${org}/${team}`, {
    name: team,
    ...(options.displayName !== undefined ? { displayName: options.displayName } : {}),
  });
  if (options.json) return say(JSON.stringify(done));
  say(`created ${org}/${String(done['name'])} "${String(done['displayName'])}"${receiptOf(done)}`);
}

/** `keyplane orgs teams rename ORG TEAM DISPLAY_NAME`: only the display name changes. */
export async function renameTeam(org: string, team: string, displayName: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  const path = teamPath(org, team);
  progress(`renaming ${org}/${team} at ${api.base}`);
  const done = await api.call('PUT', path, `cannot rename ${org}/${team}`, { displayName });
  if (options.json) return say(JSON.stringify(done));
  say(`${org}/${team} is "${String(done['displayName'])}"${receiptOf(done)}`);
}

/** `keyplane orgs teams delete ORG TEAM`: its memberships end, and the grants they alone admitted. */
export async function deleteTeam(org: string, team: string, options: Options): Promise<void> {
  const api = adminApi(options.controlPlane);
  const path = teamPath(org, team);
  progress(`deleting ${org}/${team} at ${api.base}`);
  const done = await api.call('DELETE', path, `cannot delete ${org}/${team}`);
  if (options.json) return say(JSON.stringify(done));
  say(`deleted ${org}/${team}${receiptOf(done)}`);
}

/** `keyplane orgs teams add-member|remove-member ORG TEAM ACCOUNT`. */
export async function changeMember(
  change: 'add' | 'remove',
  org: string,
  team: string,
  ref: string,
  options: Options,
): Promise<void> {
  const api = adminApi(options.controlPlane);
  const path = teamPath(org, team);
  const account = await accountOf(api, ref);
  progress(
    `${change === 'add' ? 'adding' : 'removing'} ${account.label} ${change === 'add' ? 'to' : 'from'} ${org}/${team}`,
  );
  const done = await api.call(
    change === 'add' ? 'PUT' : 'DELETE',
    `${path}/members/${encodeURIComponent(account.identityId)}`,
    `cannot ${change} ${account.label} ${change === 'add' ? 'to' : 'from'} ${org}/${team}`,
  );
  if (options.json) return say(JSON.stringify({ ...done, identityId: account.identityId }));
  say(`${account.label} ${change === 'add' ? 'is in' : 'left'} ${org}/${team}${receiptOf(done)}`);
}

export function orgsCommands(program: Command): void {
  const orgs = program
    .command('orgs')
    .description("Organizations through a running control plane's API (token from KEYPLANE_ADMIN_TOKEN).");
  const teams = orgs
    .command('teams')
    .description(
      "List, create, rename or delete an org's teams and set their members, as the operator (any org). Exit 0 done, 1 refused, 2 usage or network error.",
    );
  const common = (command: Command) =>
    command
      .argument('<org>', "the organization's slug")
      .option('--control-plane <url>', 'base URL (issuer) of the control plane')
      .option('--json', 'print the result (or the refusal) as one JSON object');
  const run = (options: Options, work: () => Promise<void>) => withJsonRefusals(options.json, work, say);

  common(teams.command('list').description("The org's teams, one per line: name, display name, members.")).action(
    (org: string, options: Options) => run(options, () => listTeams(org, options)),
  );
  common(teams.command('create').description('Create a team; its name (slug) is fixed from now on.'))
    .argument('<team>', 'the team name: 1 to 63 lower-case letters, digits or dashes')
    .option('--display-name <text>', 'what people call it (default: the name)')
    .action((org: string, team: string, options: Options) => run(options, () => createTeam(org, team, options)));
  common(teams.command('rename').description("Change a team's display name (its name stays)."))
    .argument('<team>', 'the team name')
    .argument('<display-name>', 'the new display name')
    .action((org: string, team: string, displayName: string, options: Options) =>
      run(options, () => renameTeam(org, team, displayName, options)),
    );
  common(teams.command('delete').description('Delete a team; grants only it admitted end.'))
    .argument('<team>', 'the team name')
    .action((org: string, team: string, options: Options) => run(options, () => deleteTeam(org, team, options)));
  for (const change of ['add', 'remove'] as const)
    common(
      teams
        .command(`${change}-member`)
        .description(
          change === 'add'
            ? 'Add a member of the org to the team.'
            : 'Remove a member from the team; grants it no longer admits end.',
        ),
    )
      .argument('<team>', 'the team name')
      .argument('<account>', 'identity id (usr_…) or username')
      .action((org: string, team: string, ref: string, options: Options) =>
        run(options, () => changeMember(change, org, team, ref, options)),
      );
}
