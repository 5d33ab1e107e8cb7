import { fail, KeyplaneError } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import { type AccountSummary, findAccount } from '../accounts/lifecycle.js';
import { checkReadiness } from '../health/readiness.js';
import type { StoredOrg } from '../storage/interface.js';
import { liveGrantsOf } from '../agents/grants.js';
import { listConnections } from '../federation/connections.js';
import { orgScimTokens } from '../scim/tokens.js';

/** An account as the console's list shows it. */
type ListedAccount = Pick<AccountSummary, 'identityId' | 'username' | 'state'>;

/**
 * What the console's pages read (docs/console.md): each a few indexed reads, a page at a time, so
 * a list stays fast with 100,000 accounts and 10,000 clients.
 */
export type ConsoleReadServices = Pick<
  ControlPlaneServices,
  'storage' | 'config' | 'mailer' | 'keys' | 'events' | 'now' | 'state'
>;

export const PAGE_SIZE = 50;

export async function consoleOverview(services: ConsoleReadServices) {
  let ready = true;
  try {
    await checkReadiness(services);
  } catch {
    ready = false;
  }
  return {
    ready,
    keys: await services.storage.keys.list(),
    checkpoint: await services.storage.receipts.latestCheckpoint(),
    gateways: await services.storage.clients.listGateways(),
    warnings: {
      noFounder: !(await services.storage.identities.founderExists()),
      devMasterKey: !services.config.masterKey,
      mailToFiles: services.mailer.kind === 'outbox',
    },
  };
}

export const listGatewayClients = (services: Pick<ControlPlaneServices, 'storage'>) =>
  services.storage.clients.listGateways();

/** A new signing key (the newest signs, the others still verify), receipted with who asked. */
export async function rotateSigningKey(services: ConsoleReadServices, actor: Actor): Promise<{ receipt?: string }> {
  const rotated = await services.keys.rotate();
  return services.storage.transaction((tx) =>
    services.events.record(tx, {
      type: 'keys.rotated',
      at: services.now(),
      outcome: 'success',
      actor,
      kid: rotated.current,
      retired: rotated.retired,
    }),
  );
}

/** Accounts by identity id, username (a prefix lists every match, by username) or a verified e-mail address. */
export async function searchAccounts(
  services: Pick<ControlPlaneServices, 'storage'>,
  q: string,
  after: string | null,
): Promise<{ found: ListedAccount[]; next: string | null }> {
  const exact: ListedAccount[] = [];
  if (q.includes('@')) {
    const email = await services.storage.emails.findVerified(q.toLowerCase());
    if (email) exact.push(await findAccount(services, email.identityId));
    return { found: exact, next: null };
  }
  if (q !== '' && after === null) {
    try {
      exact.push(await findAccount(services, q));
    } catch (error) {
      if (!(error instanceof KeyplaneError && error.reason === 'not_found')) throw error;
    }
  }
  const listed = await services.storage.identities.listPage({ after, prefix: q.toLowerCase(), limit: PAGE_SIZE });
  const found = [...exact, ...listed.filter((a) => !exact.some((e) => e.identityId === a.identityId))];
  return { found, next: listed.length === PAGE_SIZE ? listed.at(-1)!.username : null };
}

/** One account as the console shows it: its sessions, passkeys, addresses, orgs, agents and role. */
export async function accountDetail(services: Pick<ControlPlaneServices, 'storage' | 'now'>, ref: string) {
  const account = await findAccount(services, ref);
  const id = account.identityId;
  const [sessions, passkeys, emails, orgs, agents, role] = await Promise.all([
    services.storage.sessions.listLive(id, services.now()),
    services.storage.credentials.listByIdentity(id),
    services.storage.emails.listByIdentity(id),
    services.storage.orgs.listForMember(id),
    services.storage.agents.listByOwner(id),
    services.storage.operators.roleOf(id),
  ]);
  return { account, sessions, passkeys, emails, orgs, agents, role };
}

export const listClientsPage = (services: Pick<ControlPlaneServices, 'storage'>, after: string | null) =>
  services.storage.clients.list(after, PAGE_SIZE);

export const listApis = (services: Pick<ControlPlaneServices, 'storage'>) => services.storage.apis.list();

/** Every org by slug, a page at a time. */
export async function listOrgsPage(
  services: Pick<ControlPlaneServices, 'storage'>,
  after: string | null,
): Promise<{ orgs: StoredOrg[]; next: string | null }> {
  const orgs = await services.storage.orgs.listPage({ after, limit: PAGE_SIZE });
  return { orgs, next: orgs.length === PAGE_SIZE ? orgs.at(-1)!.slug : null };
}

/**
 * One org as the console shows it: its members with their usernames, its teams with their sizes,
 * its mail domains, connections and SCIM tokens (revoked ones too, never a secret).
 */
export async function orgDetail(services: Pick<ControlPlaneServices, 'storage'>, slug: string) {
  const org = await services.storage.orgs.getBySlug(slug);
  if (!org) throw fail('not_found', 'no such organization');
  const [members, teams, mailDomains, connections, scimTokens] = await Promise.all([
    services.storage.orgs.members(org.orgId),
    services.storage.teams.list(org.orgId),
    services.storage.orgs.mailDomains(org.orgId),
    listConnections(services, org),
    orgScimTokens(services, org.orgId),
  ]);
  const names = new Map(
    (await services.storage.identities.summaries(members.map((m) => m.identityId))).map((s) => [
      s.identityId,
      s.username,
    ]),
  );
  const sizes = await Promise.all(
    teams.map(async (team) => (await services.storage.teams.members(team.teamId)).length),
  );
  return {
    org,
    members: members.map((m) => ({ ...m, username: names.get(m.identityId) ?? m.identityId })),
    teams: teams.map((team, i) => ({ ...team, size: sizes[i]! })),
    mailDomains,
    connections,
    scimTokens,
  };
}

/** Every agent by id, a page at a time, with its owner's username and the grants that still stand. */
export async function listAgentsPage(services: Pick<ControlPlaneServices, 'storage'>, after: string | null) {
  const agents = await services.storage.agents.listPage({ after, limit: PAGE_SIZE });
  const owners = new Map(
    (await services.storage.identities.summaries([...new Set(agents.map((a) => a.ownerId))])).map((s) => [
      s.identityId,
      s.username,
    ]),
  );
  const grants = await Promise.all(agents.map((a) => liveGrantsOf(services, a.agentId)));
  return {
    agents: agents.map((agent, i) => ({
      agent,
      owner: owners.get(agent.ownerId) ?? agent.ownerId,
      grants: grants[i]!,
    })),
    next: agents.length === PAGE_SIZE ? agents.at(-1)!.agentId : null,
  };
}
