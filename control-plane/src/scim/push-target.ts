import { meetsAssurance, type AssuranceLevel } from '#lib/assurance/assurance.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { oauthError } from '#lib/oauth/errors.js';
import { readScimTarget, type ScimTargetInput } from '#lib/scim/outbound.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import type { StoredClient, Stores } from '../storage/interface.js';
import { scimTokenContext } from './push.js';

/**
 * Who sets a client's SCIM server (docs/scim.md#outbound-scim): it pushes an org's members to
 * someone else's server, so only on a client an org or the operator owns, and only the operator
 * (admin token or console) or an owner of that org at assurance `sensitive`.
 */
export type ScimSetter =
  { by: 'operator'; actor: Actor } | { by: 'person'; identityId: string; assurance: AssuranceLevel };

export async function checkScimSetter(
  services: Pick<ControlPlaneServices, 'storage'>,
  ownerId: string | null,
  setter: ScimSetter,
): Promise<void> {
  const org = ownerId === null ? null : await services.storage.orgs.get(ownerId);
  if (ownerId !== null && !org)
    throw oauthError(
      'invalid_client_metadata',
      'scim is accepted only on clients an organization or the operator owns',
    );
  if (setter.by === 'operator') return;
  const member = org ? await services.storage.orgs.member(org.orgId, setter.identityId) : null;
  if (member?.role !== 'owner')
    throw fail('forbidden', "a client's SCIM server is set by an owner of its organization");
  if (!meetsAssurance(setter.assurance, 'sensitive'))
    throw fail('insufficient_assurance', 'setting a SCIM server needs a sensitive session; step up at /auth/step-up', {
      fields: { required: 'sensitive', stepUp: '/auth/step-up' },
    });
}

/**
 * Takes the `scim` member out of a registration or update body (it is not stored with the
 * metadata: the token is sealed apart): undefined when absent, null to remove the server.
 */
export function takeScimMember(fields: Record<string, unknown>): ScimTargetInput | null | undefined {
  const target = readScimTarget(fields.scim);
  delete fields.scim;
  return target;
}

/** The actor a setter records. */
export function setterActor(setter: ScimSetter): Actor {
  return setter.by === 'operator' ? setter.actor : { type: 'person', id: setter.identityId };
}

/**
 * Stores (or with null removes) the client's SCIM server in `tx`, its token sealed, and queues
 * its first reconciliation; the caller refreshes the targets and nudges the loop afterwards
 * (`afterScimChange`).
 */
export async function writeScimTarget(
  services: Pick<ControlPlaneServices, 'secrets' | 'events' | 'now'>,
  tx: Stores,
  client: Pick<StoredClient, 'clientId' | 'ownerId'>,
  input: ScimTargetInput | null,
  actor: Actor,
): Promise<{ receipt?: string }> {
  const now = services.now();
  const orgId = client.ownerId;
  if (input === null) {
    if (!(await tx.scimPush.removeTarget(client.clientId))) return {};
    return services.events.record(tx, {
      type: 'scim.outbound.removed',
      at: now,
      outcome: 'success',
      actor,
      clientId: client.clientId,
      orgId,
    });
  }
  const existing = await tx.scimPush.target(client.clientId);
  await tx.scimPush.putTarget({
    clientId: client.clientId,
    baseUrl: input.baseUrl,
    tokenSealed: services.secrets.seal(scimTokenContext(client.clientId), input.token),
    createdAt: existing?.createdAt ?? now,
    updatedAt: now,
    lastSyncAt: existing?.lastSyncAt ?? null,
  });
  await tx.scimPush.enqueue(client.clientId, 'reconcile', client.clientId, now);
  return services.events.record(tx, {
    type: 'scim.outbound.configured',
    at: now,
    outcome: 'success',
    actor,
    clientId: client.clientId,
    orgId,
  });
}

/** After a change: the follower sees the new target at once and the first push starts now. */
export async function afterScimChange(
  services: Pick<ControlPlaneServices, 'scimPushTargets' | 'scimPushDelivery'>,
): Promise<void> {
  await services.scimPushTargets.refresh();
  services.scimPushDelivery.nudge();
}

/** Sets or removes the client's SCIM server in a transaction of its own (the admin route). */
export async function setScimTarget(
  services: Pick<
    ControlPlaneServices,
    'storage' | 'secrets' | 'events' | 'now' | 'scimPushTargets' | 'scimPushDelivery'
  >,
  client: StoredClient,
  input: ScimTargetInput | null,
  setter: ScimSetter,
): Promise<{ receipt?: string }> {
  await checkScimSetter(services, client.ownerId, setter);
  const recorded = await services.storage.transaction((tx) =>
    writeScimTarget(services, tx, client, input, setterActor(setter)),
  );
  await afterScimChange(services);
  return recorded;
}
