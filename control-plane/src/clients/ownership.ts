import { fail } from '#lib/errors/keyplane-error.js';
import { hasRole } from '#lib/orgs/roles.js';
import type { StoredClient } from '../storage/interface.js';
import { loadMembership, type OrgServices } from '../orgs/membership.js';

/**
 * Organization-owned OIDC clients (docs/orgs.md#apps): a client's `ownerId` is either an account
 * (personal) or an organization id (`org_…`). Org admins and owners register, list, edit, rotate
 * and revoke the org's clients; members may not (403 `forbidden`), and anyone outside the org
 * gets the 404 of an unknown org or client.
 */

/** The org that will own a client registered with `org: <slug>`: the caller must be its admin or owner. */
export async function orgOwnerFor(services: OrgServices, slug: unknown, identityId: string): Promise<string> {
  if (typeof slug !== 'string' || slug.length === 0 || slug.length > 64)
    throw fail('invalid_request', 'org must be the slug of an organization');
  const m = await loadMembership(services, slug, identityId, 'admin');
  return m.org.orgId;
}

/** The clients of an org, for its admins and owners. */
export async function listOrgClients(
  services: OrgServices,
  slug: unknown,
  identityId: string,
): Promise<StoredClient[]> {
  const orgId = await orgOwnerFor(services, slug, identityId);
  return services.storage.clients.listByOwner(orgId);
}

/**
 * Whether `identityId` may manage `client`: its own, or one of an org where it is an admin or
 * owner. A member of the owning org is refused with 403; everybody else sees 404, as if the
 * client did not exist.
 */
export async function checkClientManager(
  services: OrgServices,
  client: StoredClient | null,
  identityId: string,
): Promise<StoredClient> {
  if (!client || client.ownerId === null) throw fail('not_found', 'no such client');
  if (client.ownerId === identityId) return client;
  const org = await services.storage.orgs.get(client.ownerId);
  const member = org ? await services.storage.orgs.member(org.orgId, identityId) : null;
  if (!member) throw fail('not_found', 'no such client');
  if (!hasRole(member.role, 'admin'))
    throw fail('forbidden', "managing the organization's apps needs the admin or owner role");
  return client;
}

/** The client `clientId` if `identityId` may manage it (`checkClientManager`'s refusals otherwise). */
export async function managedClient(
  services: OrgServices,
  identityId: string,
  clientId: string,
): Promise<StoredClient> {
  return checkClientManager(services, await services.storage.clients.get(clientId), identityId);
}

/** The clients an account owns, or with `org` (a slug) the clients of that org, for its admins and owners. */
export async function listOwnedClients(
  services: OrgServices,
  identityId: string,
  org?: unknown,
): Promise<StoredClient[]> {
  return org === undefined
    ? services.storage.clients.listByOwner(identityId)
    : listOrgClients(services, org, identityId);
}
