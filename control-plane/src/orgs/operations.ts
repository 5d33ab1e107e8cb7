import { fail } from '../../../lib/errors/keyplane-error.js';
import { checkRoleChange, checkSiteUrl, hasRole, slugify, type OrgRole } from '../../../lib/orgs/roles.js';
import { checkFreeText } from '../../../lib/accounts/username.js';
import { randomId, randomToken } from '../../../lib/util/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { OrgInvite, OrgMember, OrgSite, OrgStore, StoredOrg } from '../storage/types.js';

/** What org operations need: storage, the event bus (receipts) and the clock. */
export type OrgServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

export interface Membership {
  org: StoredOrg;
  role: OrgRole;
}

const NAME_MAX = 80;

/**
 * The org as its member sees it. A non-member gets the same 404 as for an unknown slug, so
 * org names cannot be probed.
 */
export async function loadMembership(
  services: OrgServices,
  slug: string,
  identityId: string,
  needed: OrgRole = 'member',
): Promise<Membership> {
  const org = await services.storage.orgs.getBySlug(slug);
  const member = org ? await services.storage.orgs.member(org.orgId, identityId) : null;
  if (!org || !member) throw fail('not_found', 'no such organization');
  if (!hasRole(member.role, needed)) throw fail('forbidden', `this needs the ${needed} role in the organization`);
  return { org, role: member.role };
}

/** Creates an org; the caller becomes its owner. The slug comes from the name, made unique. */
export async function createOrg(
  services: OrgServices,
  actor: string,
  input: { name: unknown; website?: unknown },
): Promise<{ org: StoredOrg; receipt?: string }> {
  const name = checkFreeText(input.name, NAME_MAX, 'invalid_request', 'the organization name');
  if (!name) throw fail('invalid_request', 'the organization needs a name');
  let website: string | null = null;
  if (input.website !== undefined && input.website !== null && input.website !== '') {
    const checked = checkSiteUrl(input.website);
    if (!checked.ok) throw fail('invalid_site_url', `the website is not usable (${checked.refusal})`);
    website = checked.url;
  }
  const base = slugify(name);
  const now = services.now();
  for (let attempt = 0; attempt < 5; attempt++) {
    const slug =
      attempt === 0
        ? base
        : `${base.slice(0, 33)}-${randomToken(3)
            .toLowerCase()
            .replace(/[^a-z0-9]/g, 'x')}`;
    const org: StoredOrg = { orgId: randomId('org'), slug, name, website, createdAt: now };
    const created = await services.storage.transaction(async (tx) => {
      if (!(await tx.orgs.create(org, actor))) return null;
      return services.events.record(tx, {
        type: 'org.created',
        at: now,
        outcome: 'success',
        orgId: org.orgId,
        by: actor,
      });
    });
    if (created) return { org, ...created };
  }
  throw fail('conflict', 'could not find a free slug for this name; try another name');
}

export async function addSite(
  services: OrgServices,
  m: Membership,
  actor: string,
  input: { url: unknown; label?: unknown },
): Promise<{ site: OrgSite; receipt?: string }> {
  requireManager(m);
  const checked = checkSiteUrl(input.url);
  if (!checked.ok) throw fail('invalid_site_url', `the site URL is not usable (${checked.refusal})`);
  const label =
    input.label === undefined || input.label === null
      ? null
      : checkFreeText(input.label, NAME_MAX, 'invalid_request', 'the label') || null;
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const existing = await tx.orgs.sites(m.org.orgId);
    if (existing.some((s) => s.url === checked.url)) throw fail('conflict', 'this site is registered already');
    // The first site added becomes primary (docs/orgs.md).
    const site: OrgSite = {
      siteId: randomId('site'),
      orgId: m.org.orgId,
      url: checked.url,
      label,
      primary: existing.length === 0,
      proofToken: randomToken(24),
      verifiedAt: null,
      createdAt: now,
    };
    await tx.orgs.addSite(site);
    const { receipt } = await services.events.record(tx, {
      type: 'org.site_added',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      siteId: site.siteId,
      primary: site.primary,
      by: actor,
    });
    return { site, ...(receipt ? { receipt } : {}) };
  });
}

export async function removeSite(
  services: OrgServices,
  m: Membership,
  actor: string,
  siteId: string,
): Promise<{ receipt?: string; primary: string | null }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const site = (await tx.orgs.sites(m.org.orgId)).find((s) => s.siteId === siteId);
    if (!site || !(await tx.orgs.removeSite(m.org.orgId, siteId)))
      throw fail('not_found', 'no such site in this organization');
    // When the primary goes, the oldest remaining site takes its place so the org keeps a headline.
    let primary = (await tx.orgs.sites(m.org.orgId)).find((s) => s.primary)?.siteId ?? null;
    if (site.primary) {
      const next = (await tx.orgs.sites(m.org.orgId))[0];
      if (next) {
        await tx.orgs.setPrimary(m.org.orgId, next.siteId);
        primary = next.siteId;
      }
    }
    const { receipt } = await services.events.record(tx, {
      type: 'org.site_removed',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      siteId,
      by: actor,
    });
    return { primary, ...(receipt ? { receipt } : {}) };
  });
}

export async function promoteSite(
  services: OrgServices,
  m: Membership,
  actor: string,
  siteId: string,
): Promise<{ receipt?: string }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.orgs.setPrimary(m.org.orgId, siteId))) throw fail('not_found', 'no such site in this organization');
    return services.events.record(tx, {
      type: 'org.site_promoted',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      siteId,
      by: actor,
    });
  });
}

export async function changeRole(
  services: OrgServices,
  m: Membership,
  actor: string,
  target: string,
  role: OrgRole,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const member = await tx.orgs.member(m.org.orgId, target);
    if (!member) throw fail('not_found', 'that account is not a member');
    refuseRoleChange(checkRoleChange(m.role, member.role, role, await tx.orgs.countOwners(m.org.orgId)));
    if (member.role === role) return {};
    await tx.orgs.setRole(m.org.orgId, target, role);
    return services.events.record(tx, {
      type: 'org.member_role_changed',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      identityId: target,
      from: member.role,
      role,
      by: actor,
    });
  });
}

export async function removeMember(
  services: OrgServices,
  m: Membership,
  actor: string,
  target: string,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const member = await tx.orgs.member(m.org.orgId, target);
    if (!member) throw fail('not_found', 'that account is not a member');
    refuseRoleChange(checkRoleChange(m.role, member.role, null, await tx.orgs.countOwners(m.org.orgId)));
    await tx.orgs.removeMember(m.org.orgId, target);
    return services.events.record(tx, {
      type: 'org.member_removed',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      identityId: target,
      by: actor,
    });
  });
}

/** Invites an account by username; it shows on that account's /account page until accepted. */
export async function inviteMember(
  services: OrgServices,
  m: Membership,
  actor: string,
  username: string,
  role: OrgRole,
): Promise<{ identityId: string; receipt?: string }> {
  requireManager(m);
  if (role === 'owner' && m.role !== 'owner') throw fail('forbidden', 'only an owner can grant the owner role');
  const identity = await services.storage.identities.findByUsername(username.trim().toLowerCase());
  if (!identity) throw fail('not_found', 'no account with that username');
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (await tx.orgs.member(m.org.orgId, identity.identityId))
      throw fail('already_member', 'that account is a member already');
    await tx.orgs.putInvite({
      orgId: m.org.orgId,
      identityId: identity.identityId,
      role,
      invitedBy: actor,
      createdAt: now,
    });
    const { receipt } = await services.events.record(tx, {
      type: 'org.member_invited',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      identityId: identity.identityId,
      role,
      by: actor,
    });
    return { identityId: identity.identityId, ...(receipt ? { receipt } : {}) };
  });
}

/** Accepts the caller's invite to the org named by `slug` (one use: the invite is taken). */
export async function acceptInvite(
  services: OrgServices,
  slug: string,
  identityId: string,
): Promise<{ org: StoredOrg; role: OrgRole; receipt?: string }> {
  const org = await services.storage.orgs.getBySlug(slug);
  if (!org) throw fail('not_found', 'no invitation to this organization');
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const invite = await tx.orgs.takeInvite(org.orgId, identityId);
    if (!invite || !(await inviteStands(tx.orgs, invite)))
      throw fail('not_found', 'no invitation to this organization');
    const member: OrgMember = { identityId, role: invite.role, addedAt: now };
    if (!(await tx.orgs.addMember(org.orgId, member))) throw fail('already_member', 'you are a member already');
    const { receipt } = await services.events.record(tx, {
      type: 'org.member_joined',
      at: now,
      outcome: 'success',
      orgId: org.orgId,
      identityId,
      role: invite.role,
    });
    return { org, role: invite.role, ...(receipt ? { receipt } : {}) };
  });
}

/** The account's invites that still stand (a void one is not offered). */
export async function standingInvites(
  orgs: Pick<OrgStore, 'invitesFor' | 'member'>,
  identityId: string,
): Promise<OrgInvite[]> {
  const invites = await orgs.invitesFor(identityId);
  const stands = await Promise.all(invites.map((invite) => inviteStands(orgs, invite)));
  return invites.filter((_, n) => stands[n]);
}

/**
 * An invite stands only while its inviter could still send it: still a member since before the
 * invite (not removed, nor removed and added again), an admin or owner, and an owner for an owner
 * invite. Removing or demoting an inviter so voids their pending invites (docs/orgs.md#invites):
 * an admin cannot leave an invite to their own second account behind.
 */
export async function inviteStands(orgs: Pick<OrgStore, 'member'>, invite: OrgInvite): Promise<boolean> {
  const inviter = await orgs.member(invite.orgId, invite.invitedBy);
  if (!inviter || inviter.addedAt > invite.createdAt) return false;
  return hasRole(inviter.role, invite.role === 'owner' ? 'owner' : 'admin');
}

function requireManager(m: Membership): void {
  if (!hasRole(m.role, 'admin')) throw fail('forbidden', 'this needs the admin or owner role in the organization');
}

function refuseRoleChange(refusal: ReturnType<typeof checkRoleChange>): void {
  if (refusal === 'forbidden')
    throw fail('forbidden', 'only an owner can grant, change or remove the owner role; management needs admin');
  if (refusal === 'last_owner') throw fail('last_owner', 'the organization must keep at least one owner');
}

/** The organizations where the account is an admin or owner, with its role there. */
export async function orgsAdministeredBy(
  services: Pick<OrgServices, 'storage'>,
  identityId: string,
): Promise<Array<StoredOrg & { role: OrgRole }>> {
  return (await services.storage.orgs.listForMember(identityId)).filter((o) => hasRole(o.role, 'admin'));
}
