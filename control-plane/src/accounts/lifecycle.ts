import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';
import type { AccountState, Stores } from '../storage/interface.js';
import { queueBackchannelLogouts } from '../logout/backchannel.js';
import { ADMIN_TOKEN, type Actor } from '../events/types.js';
import { refuseLastOperator } from '../console/last-operator.js';

/** What the account lifecycle needs: storage, the event bus (receipts) and the clock. */
export type AccountServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

export interface AccountSummary {
  identityId: string;
  username: string;
  state: AccountState;
  /** The org that manages the account (docs/orgs.md#managed-accounts); null for a personal account. */
  managedBy: { orgId: string; slug: string } | null;
}

export interface AccountChange {
  account: AccountSummary;
  /** False when the account was in the asked state already (nothing recorded). */
  changed: boolean;
  receipt?: string;
}

async function summaryOf(tx: Stores, identityId: string): Promise<AccountSummary | null> {
  const identity = await tx.identities.get(identityId);
  const state = identity ? await tx.identities.state(identityId) : null;
  if (!identity || !state) return null;
  const org = identity.managedBy ? await tx.orgs.get(identity.managedBy) : null;
  return {
    identityId,
    username: identity.username,
    state,
    managedBy: org ? { orgId: org.orgId, slug: org.slug } : null,
  };
}

function unknownAccount(): never {
  throw fail('not_found', 'no account has this id or username');
}

/**
 * Finds an account by identity id or by username (a previous username, kept as an alias, works
 * too). An identity id is tried first: ids and usernames come from the same alphabet.
 */
export async function findAccount(services: Pick<AccountServices, 'storage'>, ref: string): Promise<AccountSummary> {
  if (ref.length === 0 || ref.length > 100) unknownAccount();
  const byId = await summaryOf(services.storage, ref);
  if (byId) return byId;
  const byName = await services.storage.identities.findByUsername(ref.toLowerCase());
  return (byName && (await summaryOf(services.storage, byName.identityId))) || unknownAccount();
}

/**
 * Refuses a sign-in of an account that is not active, whatever the path (page, direct grant,
 * FedCM, console; docs/scim.md#suspension): `account_suspended` when its org suspended it,
 * `account_disabled` when the operator paused it or it is gone.
 */
export async function requireSignInAllowed(storage: Pick<Stores, 'identities'>, identityId: string): Promise<void> {
  const state = await storage.identities.state(identityId);
  if (state === 'suspended')
    throw fail('account_suspended', 'the organization that manages this account has suspended it');
  if (state !== 'active') throw fail('account_disabled', 'this account is disabled; ask the operator of this server');
}

/** True when the account exists and is not disabled: checked on every sign-in and every grant. */
export async function isAccountActive(storage: Pick<Stores, 'identities'>, identityId: string): Promise<boolean> {
  return (await storage.identities.state(identityId)) === 'active';
}

/**
 * Back-Channel Logout 1.0: every client with tokens from a live session of the account is told
 * that the session ends (the caller ends them in the same transaction).
 */
async function announceEndOfSessions(
  services: Pick<AccountServices, 'events'>,
  tx: Stores,
  identityId: string,
  now: number,
): Promise<void> {
  const live = await tx.sessions.listLive(identityId, now);
  await queueBackchannelLogouts(
    services,
    tx,
    live.map((session) => session.sessionId),
    now,
  );
}

/**
 * An operator's pause: the account can no longer sign in, every session ends and every grant
 * (refresh family, and with it the access tokens issued under it) is revoked at once, so
 * enabling it again brings none of them back.
 */
export async function disableAccount(
  services: AccountServices,
  identityId: string,
  actor: Actor = ADMIN_TOKEN,
): Promise<AccountChange> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const account = (await summaryOf(tx, identityId)) ?? unknownAccount();
    if (!(await tx.identities.setState(identityId, 'disabled', now))) return { account, changed: false };
    await announceEndOfSessions(services, tx, identityId, now);
    const sessions = await tx.sessions.revokeAll(identityId, now);
    const grants = await tx.oidc.revokeGrantsOf(identityId, now);
    const { receipt } = await services.events.record(tx, {
      type: 'account.disabled',
      at: now,
      outcome: 'success',
      identityId,
      by: 'admin',
      actor,
      sessions,
      grants,
    });
    return { account: { ...account, state: 'disabled' }, changed: true, ...(receipt ? { receipt } : {}) };
  });
}

/** Lifts the pause: the user can sign in again (nothing that was ended comes back). */
export async function enableAccount(
  services: AccountServices,
  identityId: string,
  actor: Actor = ADMIN_TOKEN,
): Promise<AccountChange> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const account = (await summaryOf(tx, identityId)) ?? unknownAccount();
    if (!(await tx.identities.setState(identityId, 'active', now))) return { account, changed: false };
    const { receipt } = await services.events.record(tx, {
      type: 'account.enabled',
      at: now,
      outcome: 'success',
      identityId,
      by: 'admin',
      actor,
    });
    return { account: { ...account, state: 'active' }, changed: true, ...(receipt ? { receipt } : {}) };
  });
}

/**
 * Deletes the account in one transaction: its personal clients (each with `client.deleted`),
 * its codes, grants, refresh tokens and approvals, then the identity row, which takes passkeys,
 * TOTP, recovery codes, emails, links, sessions, devices and usernames with it. Receipts stay:
 * they name the account only by its pseudonymous identity id.
 */
export async function deleteAccount(
  services: AccountServices,
  identityId: string,
  by: 'self' | 'admin',
  actor: Actor = by === 'self' ? { type: 'person', id: identityId } : ADMIN_TOKEN,
): Promise<{ identityId: string; receipt?: string }> {
  return services.storage.transaction((tx) => deleteAccountIn(services, tx, identityId, by, actor));
}

/** {@link deleteAccount} inside the caller's transaction (an org's SCIM DELETE writes its own receipt beside it). */
export async function deleteAccountIn(
  services: AccountServices,
  tx: Stores,
  identityId: string,
  by: 'self' | 'admin',
  actor: Actor,
): Promise<{ identityId: string; receipt?: string }> {
  const now = services.now();
  if (!(await tx.identities.get(identityId))) unknownAccount();
  await refuseLastOperator(tx, identityId);
  // Told before the grants that name the sessions' clients are forgotten below.
  await announceEndOfSessions(services, tx, identityId, now);
  const clients = await tx.clients.listByOwner(identityId);
  for (const client of clients) {
    await tx.clients.remove(client.clientId);
    await services.events.record(tx, {
      type: 'client.deleted',
      at: now,
      outcome: 'success',
      actor,
      clientId: client.clientId,
    });
  }
  // Recorded before the grants go, in the same transaction: a ledger subscriber (Shared Signals)
  // still sees which clients knew the account.
  const { receipt } = await services.events.record(tx, {
    type: 'account.deleted',
    at: now,
    outcome: 'success',
    identityId,
    by,
    actor,
    clients: clients.length,
  });
  await tx.oidc.forgetIdentity(identityId);
  await tx.identities.remove(identityId);
  return { identityId, ...(receipt ? { receipt } : {}) };
}

/**
 * The org's suspension of an account it manages (docs/scim.md#suspension), inside the caller's
 * transaction: as an operator's pause, every session ends (relying parties told by back-channel
 * logout) and every grant is revoked; the flag stays apart from the operator's state. Null when
 * it was suspended already.
 */
export async function suspendAccountIn(
  services: Pick<AccountServices, 'events'>,
  tx: Stores,
  identityId: string,
  now: number,
): Promise<{ sessions: number; grants: number } | null> {
  if (!(await tx.identities.setSuspended(identityId, now))) return null;
  await announceEndOfSessions(services, tx, identityId, now);
  const sessions = await tx.sessions.revokeAll(identityId, now);
  const grants = await tx.oidc.revokeGrantsOf(identityId, now);
  return { sessions, grants };
}

/**
 * The user's own deletion: `confirm` must be the account's current username (case-folded), so a
 * stray click or a forged request without it deletes nothing.
 */
export async function deleteOwnAccount(
  services: AccountServices,
  identityId: string,
  confirm: unknown,
): Promise<{ identityId: string; receipt?: string }> {
  const identity = await services.storage.identities.get(identityId);
  if (!identity) unknownAccount();
  if (typeof confirm !== 'string' || confirm.trim().toLowerCase() !== identity.username) {
    throw fail('confirmation_mismatch', 'type your username to confirm the deletion');
  }
  return deleteAccount(services, identityId, 'self');
}
