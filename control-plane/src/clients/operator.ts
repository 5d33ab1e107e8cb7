import { fail } from '#lib/errors/keyplane-error.js';
import { hashClientSecret } from '#lib/oauth/client-auth.js';
import { clientTypeOf, usesClientSecret } from '#lib/oauth/client-metadata.js';
import { randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import { endGrantsOfClient, endGrantsOfSessions } from '../grants/end-grants.js';
import type { StoredClient } from '../storage/interface.js';
import { ADMIN_TOKEN, type Actor } from '../events/types.js';

type Services = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

/** What an operator sees of a client: its registration without any secret or secret hash. */
export function clientSummary(client: StoredClient) {
  return {
    client_id: client.clientId,
    client_name: client.metadata.client_name ?? null,
    client_type: clientTypeOf(client.metadata.token_endpoint_auth_method),
    owner: client.ownerId,
    revision: client.revision,
    created_at: new Date(client.createdAt).toISOString(),
    redirect_uris: client.metadata.redirect_uris,
    gateway: client.metadata.gateway ? { mode: client.metadata.gateway.mode } : null,
    secret_issued_at: client.secretIssuedAt === null ? null : new Date(client.secretIssuedAt).toISOString(),
  };
}

export async function findClient(services: Pick<Services, 'storage'>, clientId: string): Promise<StoredClient> {
  const client = clientId.length <= 200 ? await services.storage.clients.get(clientId) : null;
  if (!client) throw fail('not_found', 'no client has this id');
  return client;
}

/**
 * A new secret for a confidential client, conditional on the revision read: a concurrent edit
 * makes this `stale_revision` rather than overwriting it. The old secret stops working at once;
 * the new one is returned this once.
 */
export async function rotateClientSecret(
  services: Services,
  client: StoredClient,
  actor: Actor = ADMIN_TOKEN,
): Promise<{ client: StoredClient; secret: string; receipt?: string }> {
  if (!usesClientSecret(client.metadata.token_endpoint_auth_method))
    throw fail('invalid_request', 'this client does not authenticate with a client secret');
  const now = services.now();
  const secret = randomToken(32);
  return services.storage.transaction(async (tx) => {
    const stored = await tx.clients.update(client.clientId, client.revision, {
      type: client.type,
      metadata: client.metadata,
      secretHash: hashClientSecret(secret),
      secretIssuedAt: now,
      at: now,
    });
    if (!stored)
      throw fail('stale_revision', 'the client changed since it was read; try again', {
        fields: { error: 'invalid_request', error_description: 'stale revision' },
      });
    const { receipt } = await services.events.record(tx, {
      type: 'client.secret_rotated',
      at: now,
      outcome: 'success',
      actor,
      clientId: client.clientId,
      revision: stored.revision,
    });
    return { client: stored, secret, ...(receipt ? { receipt } : {}) };
  });
}

/** Deletes a client: its grants end with it, and `client.deleted` is receipted (RFC 7592 §2.3). */
export async function revokeClient(
  services: Services,
  clientId: string,
  actor: Actor = ADMIN_TOKEN,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.clients.remove(clientId))) throw fail('not_found', 'no client has this id');
    await endGrantsOfClient(services, tx, clientId, now);
    return services.events.record(tx, { type: 'client.deleted', at: now, outcome: 'success', actor, clientId });
  });
}

/**
 * Ends an account's live sessions (or the one named), with the grants they started; each
 * leaves a `session.revoked` receipt with `by: "admin"`.
 */
export async function revokeSessions(
  services: Services,
  identityId: string,
  only?: string,
  actor: Actor = ADMIN_TOKEN,
): Promise<{ revoked: string[]; receipts: string[] }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const live = (await tx.sessions.listLive(identityId, now)).map((s) => s.sessionId);
    const targets = only === undefined ? live : live.filter((id) => id === only);
    if (only !== undefined && targets.length === 0)
      throw fail('unknown_session', 'the account has no live session with this identifier');
    const revoked: string[] = [];
    const receipts: string[] = [];
    for (const sessionId of targets) {
      if (!(await tx.sessions.revoke(identityId, sessionId, now))) continue;
      revoked.push(sessionId);
      const { receipt } = await services.events.record(tx, {
        type: 'session.revoked',
        at: now,
        outcome: 'success',
        identityId,
        sessionId,
        by: 'admin',
        actor,
      });
      if (receipt) receipts.push(receipt);
    }
    await endGrantsOfSessions(services, tx, revoked, now);
    return { revoked, receipts };
  });
}
