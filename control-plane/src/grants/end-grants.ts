import type { ControlPlaneServices } from '../context.js';
import type { StoredClient, StoredGrant, Stores } from '../storage/interface.js';
import { queueBackchannelLogouts } from '../logout/backchannel.js';
import { judgeAccess } from '../clients/sign-in-access.js';

/**
 * Grants end with what started them (docs/security.md "Sign-out ends grants"). Called inside the
 * transaction that ends the sessions or revokes the client, so the session and its tokens stop
 * together; every revoked family leaves a `token.family_revoked` receipt.
 */

async function record(
  services: Pick<ControlPlaneServices, 'events'>,
  tx: Stores,
  grants: StoredGrant[],
  at: number,
  cause: 'session_ended' | 'client_revoked' | 'access_ended',
): Promise<void> {
  for (const grant of grants) {
    await services.events.record(tx, {
      type: 'token.family_revoked',
      at,
      outcome: 'success',
      clientId: grant.clientId,
      identityId: grant.identityId,
      grantId: grant.grantId,
      cause,
    });
  }
}

/**
 * Sessions ended: their refresh families (offline grants excepted) and codes not yet exchanged
 * go, and every client that got tokens in them is told by a back-channel logout token (offline
 * grants included: the session they came from is over all the same). A session token rotated
 * with the session kept is no end and never comes here.
 */
export async function endGrantsOfSessions(
  services: Pick<ControlPlaneServices, 'events'>,
  tx: Stores,
  sessionIds: readonly string[],
  at: number,
): Promise<number> {
  if (sessionIds.length === 0) return 0;
  await queueBackchannelLogouts(services, tx, sessionIds, at);
  const grants = await tx.oidc.endSessionGrants(sessionIds, at);
  await record(services, tx, grants, at, 'session_ended');
  return grants.length;
}

/** A client revoked or deleted: every refresh family and access token of it stops. */
export async function endGrantsOfClient(
  services: Pick<ControlPlaneServices, 'events'>,
  tx: Stores,
  clientId: string,
  at: number,
): Promise<number> {
  const grants = await tx.oidc.revokeClientGrants(clientId, at);
  await record(services, tx, grants, at, 'client_revoked');
  return grants.length;
}

/**
 * A membership ended or changed (docs/security.md#access-rules-on-every-path): inside the
 * transaction that changed it, every live grant of the account to a client whose `access.orgs` no
 * longer admits it is revoked (`token.family_revoked`, cause `access_ended`), and each such client
 * is sent a back-channel logout for the sign-in the grant came from.
 */
export async function endGrantsNoLongerAdmitted(
  services: Pick<ControlPlaneServices, 'events'>,
  tx: Stores,
  identityId: string,
  at: number,
): Promise<number> {
  const clients = new Map<string, StoredClient | null>();
  const ended: StoredGrant[] = [];
  for (const grant of await tx.oidc.liveGrantsOf(identityId, at)) {
    if (!clients.has(grant.clientId)) clients.set(grant.clientId, await tx.clients.get(grant.clientId));
    const orgs = clients.get(grant.clientId)?.metadata.access.orgs;
    if (!orgs || (await judgeAccess(tx, orgs, identityId)).allowed) continue;
    if (await tx.oidc.revokeGrant(grant.grantId, at)) ended.push(grant);
  }
  if (ended.length === 0) return 0;
  await queueBackchannelLogouts(
    services,
    tx,
    ended.map((g) => g.sessionId),
    at,
    ended.map((g) => ({ sessionId: g.sessionId, clientId: g.clientId })),
  );
  await record(services, tx, ended, at, 'access_ended');
  return ended.length;
}
