import { fail } from '#lib/errors/keyplane-error.js';
import { checkRoleChange, checkSiteUrl, hasRole, slugify, type OrgRole } from '#lib/orgs/roles.js';
import { checkFreeText } from '#lib/accounts/username.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredOrg } from '../storage/interface.js';
import { meetsAssurance, type AssuranceLevel } from '#lib/assurance/assurance.js';
import { endGrantsNoLongerAdmitted } from '../grants/end-grants.js';

/** Organizations and who belongs to them: creating one, loading a membership, roles, leaving (docs/orgs.md#roles). */

/** What org operations need: storage, the event bus (receipts) and the clock. */
export type OrgServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

export interface Membership {
  org: StoredOrg;
  role: OrgRole;
}

/** The longest organization name or site label. */
export const NAME_MAX = 80;

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
    await endGrantsNoLongerAdmitted(services, tx, target, now);
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
    await endGrantsNoLongerAdmitted(services, tx, target, now);
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

/** The organizations where the account is an admin or owner, with its role there. */
export async function orgsAdministeredBy(
  services: Pick<OrgServices, 'storage'>,
  identityId: string,
): Promise<Array<StoredOrg & { role: OrgRole }>> {
  return (await services.storage.orgs.listForMember(identityId)).filter((o) => hasRole(o.role, 'admin'));
}

/**
 * The org powers of wave 4 (mail domains, connections, `required`, SCIM tokens, webhooks, passkey
 * policy): an owner, at assurance `sensitive` (docs/orgs.md#mail-domains).
 */
export function requireOwnerAtSensitive(m: Membership, assurance: AssuranceLevel): void {
  if (m.role !== 'owner') throw fail('forbidden', 'this needs the owner role in the organization');
  if (!meetsAssurance(assurance, 'sensitive'))
    throw fail('insufficient_assurance', 'this needs a sensitive session; step up at /auth/step-up', {
      fields: { required: 'sensitive', stepUp: '/auth/step-up' },
    });
}

/**
 * The org as the operator's admin token acts on it: any org, with an owner's powers, for the
 * operations that accept the token (docs/orgs.md#teams). An unknown slug is 404 as for a member.
 */
export async function loadOrgAsOperator(services: OrgServices, slug: string): Promise<Membership> {
  const org = await services.storage.orgs.getBySlug(slug);
  if (!org) throw fail('not_found', 'no such organization');
  return { org, role: 'owner' };
}

export function requireManager(m: Membership): void {
  if (!hasRole(m.role, 'admin')) throw fail('forbidden', 'this needs the admin or owner role in the organization');
}

function refuseRoleChange(refusal: ReturnType<typeof checkRoleChange>): void {
  if (refusal === 'forbidden')
    throw fail('forbidden', 'only an owner can grant, change or remove the owner role; management needs admin');
  if (refusal === 'last_owner') throw fail('last_owner', 'the organization must keep at least one owner');
}
