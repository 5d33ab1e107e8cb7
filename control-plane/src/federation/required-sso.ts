import { fail } from '#lib/errors/keyplane-error.js';
import { domainOfAddress } from '#lib/orgs/mail-domain.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import type { SessionAssurance, StoredConnection, Stores } from '../storage/interface.js';
import { endSessionIn } from '../sessions/end-session.js';

/**
 * Required SSO (docs/federation.md#required-sso): an org with a `required` connection signs the
 * accounts it manages in at its upstream only. Their magic links and backup codes are refused,
 * their passkeys serve only as a step-up of a session that an upstream sign-in started, and
 * their sessions end at most `session_max_hours` after that upstream sign-in.
 */

const HOUR_MS = 3_600_000;

export interface RequiredSso {
  /** The managing org's connections: an upstream sign-in through any of them counts. */
  connectionIds: string[];
  /** The shortest `session_max_hours` of the org's required connections, in ms. */
  sessionMaxMs: number;
}

const ssoRequired = (message: string) => fail('sso_required', message);

/** Null for an account no org with a required connection manages (every personal account). */
export async function requiredSsoFor(
  storage: Pick<Stores, 'identities' | 'connections'>,
  identityId: string,
): Promise<RequiredSso | null> {
  const identity = await storage.identities.get(identityId);
  if (!identity?.managedBy) return null;
  const connections = await storage.connections.list(identity.managedBy);
  const required = connections.filter((c) => c.required);
  if (required.length === 0) return null;
  return {
    connectionIds: connections.map((c) => c.connectionId),
    sessionMaxMs: Math.min(...required.map((c) => c.sessionMaxHours)) * HOUR_MS,
  };
}

/**
 * A magic link asked for an address under a required connection's mail domains: refused by the
 * domain alone, so an unknown address there gets the same answer as an account's.
 */
export async function refuseRequiredDomain(storage: Pick<Stores, 'connections'>, email: string): Promise<void> {
  const domain = domainOfAddress(email.trim().toLowerCase());
  const holder = domain === null ? null : await storage.connections.forDomain(domain);
  if (holder === null || holder.orgId === null) return;
  const connections = holder.required ? [holder] : await storage.connections.list(holder.orgId);
  if (connections.some((c) => c.required && c.domains.includes(domain!)))
    throw ssoRequired('your organization signs you in through its identity provider: use its sign-in button');
}

/**
 * When a session of a required-SSO account must end: its latest upstream sign-in through one of
 * the org's connections plus the cap. A session without one that is still within the cap cannot
 * be stepped up or signed into with a passkey (`sso_required`).
 */
export async function upstreamDeadline(
  storage: Pick<Stores, 'connections'>,
  sso: RequiredSso,
  sessionId: string,
  now: number,
): Promise<number> {
  const signIn = await storage.connections.sessionSignIn(sessionId);
  const deadline = signIn === null ? 0 : signIn.signedInAt + sso.sessionMaxMs;
  if (signIn === null || !sso.connectionIds.includes(signIn.connectionId) || deadline <= now)
    throw ssoRequired('sign in through your organization first: your passkey confirms it afterwards');
  return deadline;
}

/** The methods a required-SSO account may not sign in with at all (a passkey is judged by `upstreamDeadline`). */
export function refuseOwnMethod(assurance: SessionAssurance): void {
  if (assurance !== 'passkey')
    throw ssoRequired('your organization signs you in through its identity provider, not by mail or backup code');
}

/**
 * Required SSO on the sessions that already live (docs/federation.md#required-sso), in the
 * transaction that makes the connection required or changes it: a session of an account the org
 * manages that no upstream sign-in through one of the org's connections started ends now (with
 * its grants, so its apps get back-channel logout) and writes `federation.session_ended`; one that
 * an upstream sign-in started ends at most the cap after that sign-in (the shortest
 * `session_max_hours` of the org's required connections), and at once when that time has passed.
 */
export async function enforceRequiredSso(
  services: Pick<ControlPlaneServices, 'events' | 'now'>,
  tx: Stores,
  owner: { actor: Actor },
  connection: StoredConnection,
): Promise<void> {
  const orgId = connection.orgId;
  if (orgId === null || !connection.required) return;
  const now = services.now();
  const orgConnections = await tx.connections.list(orgId);
  const connectionIds = new Set(orgConnections.map((c) => c.connectionId));
  const capMs = Math.min(...orgConnections.filter((c) => c.required).map((c) => c.sessionMaxHours)) * HOUR_MS;
  for (const account of await tx.identities.listManaged(orgId)) {
    for (const session of await tx.sessions.listLive(account.identityId, now)) {
      const signIn = await tx.connections.sessionSignIn(session.sessionId);
      const notAfter = signIn !== null && connectionIds.has(signIn.connectionId) ? signIn.signedInAt + capMs : now;
      if (notAfter > now) {
        await tx.sessions.capExpiry(session.sessionId, notAfter);
        continue;
      }
      await endSessionIn(services, tx, { identityId: account.identityId, id: session.sessionId }, now);
      await services.events.record(tx, {
        type: 'federation.session_ended',
        at: now,
        outcome: 'success',
        actor: owner.actor,
        connectionId: connection.connectionId,
        identityId: account.identityId,
        sessionId: session.sessionId,
      });
    }
  }
}
