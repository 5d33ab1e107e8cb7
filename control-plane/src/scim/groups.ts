import { fail } from '#lib/errors/keyplane-error.js';
import { randomHex, randomId } from '#lib/crypto/random.js';
import { teamSlugFrom } from '#lib/orgs/team-slug.js';
import { GROUP_SHAPE, isObject } from '#lib/scim/attribute-path.js';
import { checkIfMatch } from '#lib/scim/etag.js';
import { equalityOn, matchesFilter, parseScimFilter } from '#lib/scim/filter.js';
import {
  groupDisplayName,
  groupExternalId,
  groupResource,
  listResponse,
  memberIdsOf,
  projectAttributes,
  readPaging,
} from '#lib/scim/resources.js';
import type { StoredTeam, Stores } from '../storage/interface.js';
import { endGrantsNoLongerAdmitted } from '../grants/end-grants.js';
import type { ScimCaller } from './tokens.js';
import { MAX_RESULTS, usersBase, type ListQuery, type ScimServices } from './users.js';

/**
 * SCIM Groups of an org (docs/scim.md#groups) are its teams: `displayName` kept exactly as sent,
 * the slug generated once from it. A Group shows and changes only the team's members the org
 * manages; personal members stay as the org's admins set them. A member who leaves a team loses
 * the grants that team admitted.
 */

interface GroupState {
  team: StoredTeam;
  /** The Group's externalId, as the directory sent it; null when none. */
  externalId: string | null;
  /** Managed members, by identity id. */
  members: string[];
}

/** The team's managed members: one join on the team's rows, never the org's whole list of accounts. */
const managedMembersOf = async (tx: Stores, team: StoredTeam) =>
  (await tx.teams.managedMembers(team.teamId)).map((m) => m.identityId);

async function groupsOf(tx: Stores, orgId: string, teams: StoredTeam[]): Promise<GroupState[]> {
  const externalIds = await tx.scim.groupExternalIds(orgId);
  return Promise.all(
    teams.map(async (team) => ({
      team,
      externalId: externalIds.get(team.teamId) ?? null,
      members: await managedMembersOf(tx, team),
    })),
  );
}

async function groupOf(tx: Stores, caller: ScimCaller, id: string): Promise<GroupState> {
  const team = id.length <= 100 ? await tx.teams.byId(caller.org.orgId, id) : null;
  if (!team) throw fail('not_found', 'this organization has no SCIM group with this id');
  return { team, externalId: await tx.scim.groupExternalId(team.teamId), members: await managedMembersOf(tx, team) };
}

function resourceOf(services: ScimServices, caller: ScimCaller, group: GroupState): Record<string, unknown> {
  return groupResource(
    group.team.teamId,
    {
      displayName: group.team.displayName,
      externalId: group.externalId,
      members: group.members.map((value) => ({ value })),
    },
    {
      resourceType: 'Group',
      created: group.team.createdAt,
      lastModified: group.team.updatedAt,
      location: `${usersBase(services, caller.org.slug)}/Groups/${group.team.teamId}`,
    },
  );
}

/** Members must be accounts the org manages: anything else is refused, never taken over. Reads only `ids`. */
async function checkMembers(tx: Stores, orgId: string, ids: string[]): Promise<void> {
  const managed = new Set<string>();
  // Bounded statements: a batched PATCH may name thousands.
  for (let from = 0; from < ids.length; from += 500)
    for (const id of await tx.identities.managedAmong(orgId, ids.slice(from, from + 500))) managed.add(id);
  const foreign = ids.find((id) => !managed.has(id));
  if (foreign !== undefined)
    throw fail('scim_invalid_value', `members[].value ${JSON.stringify(foreign)} is not a user of this organization`);
}

async function refuseDuplicateName(tx: Stores, orgId: string, displayName: string, except?: string): Promise<void> {
  const clash = (await tx.teams.list(orgId)).find((t) => t.displayName === displayName && t.teamId !== except);
  if (clash) throw fail('scim_uniqueness', 'the organization has a group with this displayName already');
}

/** Moves the team's managed members to `wanted`; answers how many were added and removed. */
async function setMembers(
  services: ScimServices,
  tx: Stores,
  group: Pick<GroupState, 'team' | 'members'>,
  wanted: string[],
  now: number,
): Promise<{ added: number; removed: number }> {
  const current = new Set(group.members);
  const next = new Set(wanted);
  const added = wanted.filter((id) => !current.has(id));
  const removed = group.members.filter((id) => !next.has(id));
  for (const identityId of added) await tx.teams.addMember(group.team, { identityId, addedAt: now });
  for (const identityId of removed) {
    await tx.teams.removeMember(group.team.teamId, identityId);
    await endGrantsNoLongerAdmitted(services, tx, identityId, now);
  }
  return { added: added.length, removed: removed.length };
}

async function recordGroup(
  services: ScimServices,
  tx: Stores,
  caller: ScimCaller,
  type: 'scim.group_created' | 'scim.group_updated' | 'scim.group_deleted',
  teamId: string,
  counts: { added: number; removed: number },
): Promise<string | undefined> {
  const { receipt } = await services.events.record(tx, {
    type,
    at: services.now(),
    outcome: 'success',
    actor: { type: 'scim_token', id: caller.tokenId },
    orgId: caller.org.orgId,
    teamId,
    ...counts,
  });
  return receipt;
}

export async function createGroup(
  services: ScimServices,
  caller: ScimCaller,
  body: unknown,
): Promise<{ resource: Record<string, unknown>; receipt?: string }> {
  if (!isObject(body)) throw fail('scim_invalid_syntax', 'the body must be a Group resource');
  const displayName = groupDisplayName(body);
  const externalId = groupExternalId(body);
  const members = memberIdsOf(body);
  const { orgId } = caller.org;
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    await refuseDuplicateName(tx, orgId, displayName);
    await checkMembers(tx, orgId, members);
    const base = teamSlugFrom(displayName);
    let team: StoredTeam | null = null;
    for (let attempt = 0; attempt < 5 && !team; attempt++) {
      const slug = attempt === 0 ? base : `${base.slice(0, 56).replace(/-+$/, '')}-${randomHex(3)}`;
      const candidate = { teamId: randomId('team'), orgId, slug, displayName, createdAt: now, updatedAt: now };
      if (await tx.teams.create(candidate)) team = candidate;
    }
    if (!team) throw fail('conflict', 'no free team name was found; try again');
    if (externalId !== null) await tx.scim.setGroupExternalId(orgId, team.teamId, externalId);
    const counts = await setMembers(services, tx, { team, members: [] }, members, now);
    const receipt = await recordGroup(services, tx, caller, 'scim.group_created', team.teamId, counts);
    return { resource: resourceOf(services, caller, { team, externalId, members }), ...(receipt ? { receipt } : {}) };
  });
}

export async function getGroup(services: ScimServices, caller: ScimCaller, id: string) {
  return resourceOf(services, caller, await groupOf(services.storage, caller, id));
}

export async function listGroups(services: ScimServices, caller: ScimCaller, query: ListQuery) {
  const { orgId } = caller.org;
  const filter = query.filter !== undefined && query.filter !== '' ? parseScimFilter(query.filter, GROUP_SHAPE) : null;
  const paging = readPaging(query, MAX_RESULTS);
  const teams = await services.storage.teams.list(orgId);
  // `externalId eq "…"`, the look-up before every create, reads only the teams the index names.
  const byExternalId = filter && equalityOn(filter, 'externalId');
  let chosen = teams;
  if (byExternalId !== null && byExternalId !== undefined) {
    const ids = new Set(await services.storage.scim.groupsByExternalId(orgId, byExternalId));
    chosen = teams.filter((t) => ids.has(t.teamId));
  }
  // `displayName eq "…"`, Entra's look-up before every group create: only the teams of that name
  // (case-insensitively, as the filter compares it) have their members read, not every team's.
  const byName = filter && equalityOn(filter, 'displayName');
  if (byName !== null && byName !== undefined) {
    const folded = byName.toLowerCase();
    chosen = chosen.filter((t) => t.displayName.toLowerCase() === folded);
  }
  const resources = (await groupsOf(services.storage, orgId, chosen))
    .map((g) => resourceOf(services, caller, g))
    .filter((r) => filter === null || matchesFilter(r, filter, GROUP_SHAPE));
  return listResponse(resources, paging, (r) => projectAttributes(r, query.attributes, query.excludedAttributes));
}

/**
 * A PUT or PATCH: `next` makes the new resource of the stored one (`readChange`); `ifMatch`, the
 * request's `If-Match`, is checked against the version read in the same transaction.
 */
export async function writeGroup(
  services: ScimServices,
  caller: ScimCaller,
  id: string,
  next: (current: Record<string, unknown>) => Record<string, unknown>,
  ifMatch?: string,
): Promise<{ resource: Record<string, unknown>; receipt?: string }> {
  const now = services.now();
  const { orgId } = caller.org;
  return services.storage.transaction(async (tx) => {
    const group = await groupOf(tx, caller, id);
    checkIfMatch(ifMatch, resourceOf(services, caller, group));
    const after = next({
      displayName: group.team.displayName,
      ...(group.externalId !== null ? { externalId: group.externalId } : {}),
      members: group.members.map((value) => ({ value })),
    });
    const displayName = groupDisplayName(after);
    const externalId = groupExternalId(after);
    const members = memberIdsOf(after);
    const current = new Set(group.members);
    await checkMembers(
      tx,
      orgId,
      members.filter((m) => !current.has(m)),
    );
    let team = group.team;
    if (displayName !== team.displayName) {
      await refuseDuplicateName(tx, orgId, displayName, team.teamId);
      await tx.teams.rename(team.teamId, displayName, now);
      team = { ...team, displayName, updatedAt: now };
    }
    if (externalId !== group.externalId) await tx.scim.setGroupExternalId(orgId, id, externalId);
    const counts = await setMembers(services, tx, group, members, now);
    const changed = team !== group.team || externalId !== group.externalId || counts.added + counts.removed > 0;
    const receipt = changed ? await recordGroup(services, tx, caller, 'scim.group_updated', id, counts) : undefined;
    return { resource: resourceOf(services, caller, { team, externalId, members }), ...(receipt ? { receipt } : {}) };
  });
}

/** DELETE: the team ends; its members lose the grants it admitted. `ifMatch` as for a write. */
export async function deleteGroup(
  services: ScimServices,
  caller: ScimCaller,
  id: string,
  ifMatch?: string,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const group = await groupOf(tx, caller, id);
    checkIfMatch(ifMatch, resourceOf(services, caller, group));
    const everyone = await tx.teams.members(group.team.teamId);
    await tx.teams.remove(group.team.teamId);
    for (const member of everyone) await endGrantsNoLongerAdmitted(services, tx, member.identityId, now);
    const receipt = await recordGroup(services, tx, caller, 'scim.group_deleted', id, {
      added: 0,
      removed: group.members.length,
    });
    return receipt ? { receipt } : {};
  });
}
