import { publishableOrigins } from '#lib/oauth/in-place.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

type OriginServices = Pick<ControlPlaneServices, 'storage'>;

/** Host names an account's orgs proved (sites with a domain proof), in orgs it administers or owns. */
async function provedDomainsOf(services: OriginServices, identityId: string): Promise<string[]> {
  const { orgs } = services.storage;
  const administered = (await orgs.listForMember(identityId)).filter((org) => org.role !== 'member');
  const sites = (await Promise.all(administered.map((org) => orgs.sites(org.orgId)))).flat();
  return sites.filter((site) => site.verifiedAt !== null).map((site) => new URL(site.url).hostname.toLowerCase());
}

/** The origins of one in-place client that get CORS and are published (lib/oauth/in-place.ts `publishableOrigins`). */
export async function publishedOriginsOf(services: OriginServices, client: StoredClient): Promise<string[]> {
  if (client.metadata.in_place !== true) return [];
  const operatorRegistered = client.ownerId === null;
  const provedDomains = operatorRegistered ? [] : await provedDomainsOf(services, client.ownerId!);
  return publishableOrigins(client.metadata, { operatorRegistered, provedDomains });
}

/** Every published in-place origin: `/.well-known/webauthn` and the preflights read these. */
export async function publishedInPlaceOrigins(services: OriginServices): Promise<string[]> {
  const clients = await services.storage.clients.listInPlace();
  const origins = (await Promise.all(clients.map((client) => publishedOriginsOf(services, client)))).flat();
  return [...new Set(origins)];
}
