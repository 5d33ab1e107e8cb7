import { fail } from '#lib/errors/keyplane-error.js';
import { checkFreeText } from '#lib/accounts/username.js';
import { randomId } from '#lib/crypto/random.js';
import { isTeamSlug } from '#lib/orgs/team-slug.js';
import type { Actor } from '../events/types.js';
import type { StoredTeam, Stores } from '../storage/interface.js';
import { endGrantsNoLongerAdmitted } from '../grants/end-grants.js';
import { requireManager, NAME_MAX, type Membership, type OrgServices } from './membership.js';

/**
 * Teams of an org (docs/orgs.md#teams): an org admin or owner creates, renames and deletes them and
 * sets who belongs; only the org's members can be in a team. A team or team membership that ends
 * revokes, in the same transaction, every grant of the people it admitted to clients whose rules
 * no longer admit them (`endGrantsNoLongerAdmitted`). The actor is the admin acting, or the
 * operator's admin token (`keyplane orgs teams`), which may act on any org.
 */

export interface TeamView {
  name: string;
  displayName: string;
  members: string[];
}

async function teamOf(stores: Pick<Stores, 'teams'>, m: Membership, team: string): Promise<StoredTeam> {
  const found = isTeamSlug(team) ? await stores.teams.get(m.org.orgId, team) : null;
  if (!found) throw fail('not_found', 'no such team in this organization');
  return found;
}

function displayNameOf(raw: unknown, fallback: string): string {
  if (raw === undefined || raw === null) return fallback;
  return checkFreeText(raw, NAME_MAX, 'invalid_request', 'the display name') || fallback;
}

/** The org's teams with their members' identity ids (every member of the org may see them). */
export async function listTeams(services: Pick<OrgServices, 'storage'>, m: Membership): Promise<TeamView[]> {
  const teams = await services.storage.teams.list(m.org.orgId);
  return Promise.all(
    teams.map(async (team) => ({
      name: team.slug,
      displayName: team.displayName,
      members: (await services.storage.teams.members(team.teamId)).map((x) => x.identityId),
    })),
  );
}

export async function createTeam(
  services: OrgServices,
  m: Membership,
  actor: Actor,
  input: { name: unknown; displayName?: unknown },
): Promise<{ team: StoredTeam; receipt?: string }> {
  requireManager(m);
  if (!isTeamSlug(input.name))
    throw fail('invalid_request', 'the team name must be 1 to 63 lower-case letters, digits or dashes');
  const now = services.now();
  const team: StoredTeam = {
    teamId: randomId('team'),
    orgId: m.org.orgId,
    slug: input.name,
    displayName: displayNameOf(input.displayName, input.name),
    createdAt: now,
    updatedAt: now,
  };
  return services.storage.transaction(async (tx) => {
    if (!(await tx.teams.create(team))) throw fail('conflict', 'the organization has a team with this name already');
    const { receipt } = await services.events.record(tx, {
      type: 'team.created',
      at: now,
      outcome: 'success',
      actor,
      orgId: m.org.orgId,
      teamId: team.teamId,
    });
    return { team, ...(receipt ? { receipt } : {}) };
  });
}

/** Changes the display name only: the slug names the team in claims and rules and never changes. */
export async function renameTeam(
  services: OrgServices,
  m: Membership,
  actor: Actor,
  slug: string,
  input: { displayName?: unknown },
): Promise<{ team: StoredTeam; receipt?: string }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const team = await teamOf(tx, m, slug);
    const displayName = displayNameOf(input.displayName, team.displayName);
    if (displayName === team.displayName) return { team };
    await tx.teams.rename(team.teamId, displayName, now);
    const { receipt } = await services.events.record(tx, {
      type: 'team.renamed',
      at: now,
      outcome: 'success',
      actor,
      orgId: m.org.orgId,
      teamId: team.teamId,
    });
    return { team: { ...team, displayName, updatedAt: now }, ...(receipt ? { receipt } : {}) };
  });
}

export async function deleteTeam(
  services: OrgServices,
  m: Membership,
  actor: Actor,
  slug: string,
): Promise<{ receipt?: string }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const team = await teamOf(tx, m, slug);
    const members = await tx.teams.members(team.teamId);
    await tx.teams.remove(team.teamId);
    for (const member of members) await endGrantsNoLongerAdmitted(services, tx, member.identityId, now);
    return services.events.record(tx, {
      type: 'team.deleted',
      at: now,
      outcome: 'success',
      actor,
      orgId: m.org.orgId,
      teamId: team.teamId,
      members: members.length,
    });
  });
}

/** Adds an org member to the team; adding one who is in it already changes nothing. */
export async function addTeamMember(
  services: OrgServices,
  m: Membership,
  actor: Actor,
  slug: string,
  identityId: string,
): Promise<{ receipt?: string }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const team = await teamOf(tx, m, slug);
    if (!(await tx.orgs.member(m.org.orgId, identityId)))
      throw fail('not_found', 'that account is not a member of the organization');
    if (!(await tx.teams.addMember(team, { identityId, addedAt: now }))) return {};
    return services.events.record(tx, {
      type: 'team.member_added',
      at: now,
      outcome: 'success',
      actor,
      orgId: m.org.orgId,
      teamId: team.teamId,
      identityId,
    });
  });
}

export async function removeTeamMember(
  services: OrgServices,
  m: Membership,
  actor: Actor,
  slug: string,
  identityId: string,
): Promise<{ receipt?: string }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const team = await teamOf(tx, m, slug);
    if (!(await tx.teams.removeMember(team.teamId, identityId)))
      throw fail('not_found', 'that account is not a member of the team');
    await endGrantsNoLongerAdmitted(services, tx, identityId, now);
    return services.events.record(tx, {
      type: 'team.member_removed',
      at: now,
      outcome: 'success',
      actor,
      orgId: m.org.orgId,
      teamId: team.teamId,
      identityId,
    });
  });
}
