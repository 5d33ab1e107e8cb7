import { fail } from '#lib/errors/keyplane-error.js';
import { randomHex, randomId } from '#lib/crypto/random.js';
import { directoryKeys } from '#lib/federation/upstream-identity.js';
import { domainOfAddress } from '#lib/orgs/mail-domain.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredConnection, Stores } from '../storage/interface.js';
import { foldUserName } from '../scim/users.js';
import { oidcSettings } from './oidc-upstream.js';

/**
 * Who a verified upstream identity is (docs/federation.md#who-may-sign-in-through-whom), in two
 * steps so that a sign-in can ask before it replaces another account's session: `planIdentity`
 * decides without writing (refusing what the connection does not sign in), `applyIdentityPlan`
 * links or creates inside the sign-in's transaction.
 */

export type IdentityPlan =
  /** Linked before: that account. */
  | { kind: 'linked'; identityId: string }
  /** An account the org provisioned over SCIM and not yet linked to this connection. */
  | { kind: 'match'; identityId: string; orgId: string }
  /** A JIT account to create for an address in the org's proved mail domains. */
  | { kind: 'create'; orgId: string; email: string; displayName: string };

/** Decides who the upstream identity is, writing nothing; throws `not_provisioned` for one the connection does not sign in. */
export async function planIdentity(
  tx: Stores,
  connection: StoredConnection,
  claims: Record<string, unknown>,
  subject: string,
): Promise<IdentityPlan> {
  const linked = await tx.connections.findIdentity(connection.connectionId, subject);
  if (linked !== null) {
    await checkStillAdmitted(tx, connection, linked);
    return { kind: 'linked', identityId: linked };
  }
  const orgId = connection.orgId;
  if (orgId === null)
    throw fail('not_provisioned', 'this connection signs in only accounts linked to it from their account page');
  const provisioned = await matchProvisioned(tx, connection, orgId, claims);
  if (provisioned !== null) return { kind: 'match', identityId: provisioned, orgId };
  if (connection.jit === null)
    throw fail(
      'not_provisioned',
      'this organization has not added this person, and the connection creates no accounts',
    );
  const email = typeof claims.email === 'string' ? claims.email.trim().toLowerCase() : '';
  if (email.length > 254 || !(await inProvedDomain(tx, orgId, email)))
    throw fail('not_provisioned', "the upstream's address is not in a mail domain this organization has proved");
  const displayName = typeof claims.name === 'string' ? claims.name.normalize('NFC').trim().slice(0, 64) : '';
  return { kind: 'create', orgId, email, displayName };
}

/**
 * Carries the plan out inside the sign-in's transaction: a provisioned account is linked
 * (`federation.account_linked`); a JIT one is created with its verified address and a `member`
 * membership (`federation.account_created`). Returns the account's identity id.
 */
export async function applyIdentityPlan(
  services: Pick<ControlPlaneServices, 'events'>,
  tx: Stores,
  connection: StoredConnection,
  plan: IdentityPlan,
  subject: string,
  now: number,
): Promise<string> {
  if (plan.kind === 'linked') return plan.identityId;
  /** Links the upstream identity to the account and says so. */
  const linkTo = async (identityId: string, type: 'federation.account_linked' | 'federation.account_created') => {
    if (!(await tx.connections.link(connection.connectionId, subject, identityId, now)))
      throw fail('conflict', 'this identity was linked meanwhile; sign in again');
    await services.events.record(tx, {
      type,
      at: now,
      outcome: 'success',
      actor: { type: 'connection', id: connection.connectionId },
      connectionId: connection.connectionId,
      subject,
      identityId,
      orgId: plan.orgId,
    });
    return identityId;
  };
  if (plan.kind === 'match') return linkTo(plan.identityId, 'federation.account_linked');
  const identityId = randomId('usr');
  await createManagedAccount(tx, plan.email, identityId, now, plan.orgId);
  await tx.orgs.addMember(plan.orgId, { identityId, role: 'member', addedAt: now });
  const emailRow = await tx.emails.add({
    emailId: randomId('eml'),
    identityId,
    email: plan.email,
    createdAt: now,
    verifiedAt: null,
  });
  // A verified address belongs to one account: one verified elsewhere stays unverified here.
  await tx.emails.markVerified(emailRow.emailId, now);
  if (plan.displayName) await tx.identities.setDisplayName(identityId, plan.displayName, now);
  return linkTo(identityId, 'federation.account_created');
}

/** An org connection signs in only accounts its org manages, whatever was linked before. */
async function checkStillAdmitted(tx: Stores, connection: StoredConnection, identityId: string): Promise<void> {
  if (connection.orgId === null) return;
  const identity = await tx.identities.get(identityId);
  if (identity?.managedBy !== connection.orgId)
    throw fail('not_provisioned', 'this connection signs in only accounts its organization manages');
}

/** Whether the (lower-cased) address lies in a mail domain the org has proved. */
async function inProvedDomain(tx: Stores, orgId: string, address: string): Promise<boolean> {
  const domain = domainOfAddress(address);
  const holder = domain === null ? null : await tx.orgs.mailDomainHolder(domain);
  return holder?.orgId === orgId && holder.verifiedAt !== null;
}

/**
 * The provisioned account a first sign-in is (docs/scim.md#signing-in): a managed account of the
 * org, not yet linked to this connection, whose `externalId` is the upstream's object id, else
 * whose `userName` is the upstream UPN when that lies in a mail domain the org has proved. An
 * ambiguous `externalId` matches nothing.
 */
async function matchProvisioned(
  tx: Stores,
  connection: StoredConnection,
  orgId: string,
  claims: Record<string, unknown>,
): Promise<string | null> {
  const keys = directoryKeys(oidcSettings(connection).issuer, claims);
  const unlinked = async (identityId: string) =>
    (await tx.identities.get(identityId))?.managedBy === orgId &&
    !(await tx.connections.isLinked(connection.connectionId, identityId));
  if (keys.externalId !== null) {
    const byExternalId = await tx.scim.usersByExternalId(orgId, keys.externalId);
    if (byExternalId.length === 1 && (await unlinked(byExternalId[0]!.identityId))) return byExternalId[0]!.identityId;
  }
  if (keys.userName === null) return null;
  if (!(await inProvedDomain(tx, orgId, keys.userName.toLowerCase()))) return null;
  const byName = await tx.scim.userByName(orgId, foldUserName(keys.userName));
  return byName !== null && (await unlinked(byName.identityId)) ? byName.identityId : null;
}

/** Creates the managed account under a username made from the address's local part. */
async function createManagedAccount(
  tx: Stores,
  email: string,
  identityId: string,
  now: number,
  orgId: string,
): Promise<void> {
  const local = (email.split('@')[0] ?? '')
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^a-z0-9._-]/g, '')
    .replace(/^[._-]+/, '')
    .slice(0, 20);
  for (let attempt = 0; attempt < 5; attempt++) {
    const username = `${local.length >= 3 ? local : `user${local}`}-${randomHex(3)}`;
    const created = await tx.identities.create({
      identityId,
      username,
      displayName: '',
      preferences: {},
      founder: false,
      managedBy: orgId,
      createdAt: now,
      updatedAt: now,
    });
    if (created) return;
  }
  throw fail('conflict', 'no free username was found for the new account; sign in again');
}
