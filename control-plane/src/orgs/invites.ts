import { fail } from '#lib/errors/keyplane-error.js';
import { hasRole, type OrgRole } from '#lib/orgs/roles.js';
import type { OrgInvite, OrgMember, OrgStore, StoredOrg } from '../storage/interface.js';
import { requireManager, type Membership, type OrgServices } from './membership.js';

/** Invitations into an organization: issuing, accepting, and which still stand (docs/orgs.md#invites). */

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
