import {
  apiAdmits,
  resourceUnderDomain,
  validateApiDeclaration,
  type ScopeDescription,
} from '#lib/apis/api-declaration.js';
import { gatewayScopeDeclarations } from '#lib/apis/gateway-scopes.js';
import { routeScopes } from '#lib/gateway-protocol/mcp.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { randomId } from '#lib/crypto/random.js';
import { checkResourceOwnership } from '#lib/oauth/resource-ownership.js';
import type { ControlPlaneServices } from '../context.js';
import { loadMembership } from '../orgs/membership.js';
import type { StoredApi, StoredClient } from '../storage/interface.js';
import type { Actor } from '../events/types.js';

/**
 * APIs with their own scopes (docs/apis.md): the operator declares any API with the admin token;
 * an org admin declares the org's APIs at `/org/{slug}/apis`, for resources under a domain the
 * org proved and never one another owner's gateway serves.
 */
export type ApiServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

/** Who declares: the operator (admin token) or an org admin, for the org `slug`. */
export type ApiActor = { kind: 'operator' } | { kind: 'org'; slug: string; identityId: string };

const API_ID = /^api_[A-Za-z0-9_-]{1,64}$/;

/** The org the actor acts for (null for the operator); an org admin's role is checked here. */
async function orgOf(services: ApiServices, actor: ApiActor): Promise<string | null> {
  if (actor.kind === 'operator') return null;
  return (await loadMembership(services, actor.slug, actor.identityId, 'admin')).org.orgId;
}

/**
 * An org's API must live under a domain the org proved: its verified sites for now, as SAML
 * providers (docs/apis.md#who-declares-apis), and never at another owner's registered gateway.
 */
async function checkOrgResource(services: ApiServices, orgId: string, resource: string): Promise<void> {
  const proved = (await services.storage.orgs.sites(orgId))
    .filter((site) => site.verifiedAt !== null)
    .map((site) => new URL(site.url).hostname);
  if (!proved.some((domain) => resourceUnderDomain(resource, domain)))
    throw fail('invalid_target', 'the resource is not under a domain the organization proved (its verified sites)');
  const gateways = (await services.storage.clients.listGateways()).map((g) => ({
    clientId: g.clientId,
    ownerId: g.ownerId,
    redirectUris: g.metadata.redirect_uris,
  }));
  checkResourceOwnership([resource], gateways, { admin: false, ownerId: orgId });
}

async function checkAllowedOrgs(services: ApiServices, slugs: readonly string[]): Promise<void> {
  for (const slug of slugs) {
    if (!(await services.storage.orgs.getBySlug(slug)))
      throw fail('invalid_request', `allowed_orgs: ${slug} is not an organization`);
  }
}

function actorFields(actor: ApiActor): { actor: Actor } {
  return { actor: actor.kind === 'operator' ? { type: 'admin_token' } : { type: 'person', id: actor.identityId } };
}

/** Declares an API; a resource is declared once (409 `conflict`). */
export async function declareApi(
  services: ApiServices,
  actor: ApiActor,
  body: unknown,
): Promise<{ api: StoredApi; receipt?: string }> {
  const declaration = validateApiDeclaration(body);
  const orgId = await orgOf(services, actor);
  if (orgId !== null) await checkOrgResource(services, orgId, declaration.resource);
  await checkAllowedOrgs(services, declaration.allowedOrgs);
  const now = services.now();
  const api: StoredApi = {
    apiId: randomId('api_'),
    ...declaration,
    orgId,
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
  return services.storage.transaction(async (tx) => {
    if (!(await tx.apis.insert(api))) throw fail('conflict', 'an API with this resource is declared already');
    const { receipt } = await services.events.record(tx, {
      type: 'api.declared',
      at: now,
      outcome: 'success',
      apiId: api.apiId,
      orgId,
      ...actorFields(actor),
    });
    return { api, ...(receipt ? { receipt } : {}) };
  });
}

/** The APIs the actor manages: every one for the operator, the org's for its admins. */
export async function listApis(services: ApiServices, actor: ApiActor): Promise<StoredApi[]> {
  if (actor.kind === 'operator') return services.storage.apis.list();
  return services.storage.apis.list(await orgOf(services, actor));
}

/** One API the actor manages; any other answers 404 like an unknown id. */
export async function getApi(services: ApiServices, actor: ApiActor, apiId: string): Promise<StoredApi> {
  const api = API_ID.test(apiId) ? await services.storage.apis.get(apiId) : null;
  if (!api) throw fail('not_found', 'no such API');
  if (actor.kind === 'org' && api.orgId !== (await orgOf(services, actor))) throw fail('not_found', 'no such API');
  return api;
}

/**
 * Replaces name, scopes and admission (the body has the POST shape; `revision`, when sent, must be
 * the current one). The resource and the owner stay: another resource is another API.
 */
export async function updateApi(
  services: ApiServices,
  actor: ApiActor,
  apiId: string,
  body: unknown,
): Promise<{ api: StoredApi; receipt?: string }> {
  const before = await getApi(services, actor, apiId);
  const declaration = validateApiDeclaration(body);
  if (declaration.resource !== before.resource)
    throw fail('invalid_request', 'the resource of an API does not change: declare another API');
  await checkAllowedOrgs(services, declaration.allowedOrgs);
  const sent = (body as Record<string, unknown>).revision;
  const revision = sent === undefined ? before.revision : sent;
  if (typeof revision !== 'number' || !Number.isInteger(revision))
    throw fail('invalid_request', 'revision must be an integer');
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const updated = await tx.apis.update({ ...before, ...declaration, updatedAt: now }, revision);
    if (!updated) throw fail('stale_revision', 'the API changed since this revision; read it again and retry');
    const { receipt } = await services.events.record(tx, {
      type: 'api.updated',
      at: now,
      outcome: 'success',
      apiId,
      orgId: before.orgId,
      ...actorFields(actor),
    });
    return { api: updated, ...(receipt ? { receipt } : {}) };
  });
}

/** Removes an API: its scopes are no longer granted (tokens already issued run out). */
export async function removeApi(services: ApiServices, actor: ApiActor, apiId: string): Promise<{ receipt?: string }> {
  const api = await getApi(services, actor, apiId);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.apis.remove(apiId))) throw fail('not_found', 'no such API');
    return services.events.record(tx, {
      type: 'api.removed',
      at: now,
      outcome: 'success',
      apiId,
      orgId: api.orgId,
      ...actorFields(actor),
    });
  });
}

/** An API as the admin API answers it (RFC 8707 and RFC 7591 spelling). */
export function apiView(api: StoredApi) {
  return {
    apiId: api.apiId,
    resource: api.resource,
    name: api.name,
    scopes: api.scopes,
    allowed_clients: api.allowedClients,
    allowed_orgs: api.allowedOrgs,
    org: api.orgId,
    revision: api.revision,
    created_at: new Date(api.createdAt).toISOString(),
    updated_at: new Date(api.updatedAt).toISOString(),
  };
}

/** The scopes of one resource a client may ask for, with who declared each (for the consent page). */
export interface ApiAccess {
  resource: string;
  scopes: Array<{ name: string; description: ScopeDescription | null; orgId: string | null }>;
}

async function admitsClient(
  services: Pick<ControlPlaneServices, 'storage'>,
  api: StoredApi,
  client: Pick<StoredClient, 'clientId' | 'ownerId'>,
): Promise<boolean> {
  const orgs = await Promise.all(api.allowedOrgs.map((slug) => services.storage.orgs.getBySlug(slug)));
  return apiAdmits({
    apiOwnerOrgId: api.orgId,
    allowedClients: api.allowedClients,
    allowedOrgIds: orgs.flatMap((org) => (org ? [org.orgId] : [])),
    clientId: client.clientId,
    clientOwnerId: client.ownerId,
  });
}

/**
 * The API scopes `client` may ask for at `resource` (docs/apis.md#who-may-ask): those of the API
 * declared for it when it admits the client, and those the routes of a gateway serving it declare,
 * for the gateway itself, the clients it accepts and its owner's clients (any client for an MCP
 * route). Null when no declaration admits the client.
 */
export async function apiAccessFor(
  services: Pick<ControlPlaneServices, 'storage'>,
  client: Pick<StoredClient, 'clientId' | 'ownerId'>,
  resource: unknown,
): Promise<ApiAccess | null> {
  if (typeof resource !== 'string' || resource.length > 2000) return null;
  const scopes: ApiAccess['scopes'] = [];
  const api = await services.storage.apis.getByResource(resource);
  if (api && (await admitsClient(services, api, client)))
    scopes.push(...api.scopes.map((s) => ({ name: s.name, description: s.description, orgId: api.orgId })));
  for (const gateway of await services.storage.clients.listGateways()) {
    const policy = gateway.metadata.gateway!;
    const admitted =
      gateway.clientId === client.clientId ||
      gateway.ownerId === client.ownerId ||
      (policy.accept_clients ?? []).includes(client.clientId);
    const declared = gatewayScopeDeclarations({
      redirectUris: gateway.metadata.redirect_uris,
      resources: gateway.metadata.resources,
      policy,
    }).filter((d) => d.resource === resource && (d.mcp || admitted));
    for (const name of declared.flatMap((d) => d.scopes)) {
      if (!scopes.some((s) => s.name === name)) scopes.push({ name, description: null, orgId: null });
    }
  }
  return scopes.length === 0 ? null : { resource, scopes };
}

/**
 * What the consent page needs of a request's API scopes: their declarations for the resource, and
 * the names of the orgs that wrote them (their words are marked as theirs).
 */
export async function consentApiScopes(
  services: Pick<ControlPlaneServices, 'storage'>,
  client: Pick<StoredClient, 'clientId' | 'ownerId'>,
  resource: string | null | undefined,
): Promise<{ apiScopes?: ApiAccess['scopes']; apiOrgNames?: Record<string, string> }> {
  const access = await apiAccessFor(services, client, resource ?? undefined);
  if (!access) return {};
  const orgIds = [...new Set(access.scopes.flatMap((s) => (s.orgId === null ? [] : [s.orgId])))];
  const orgs = await Promise.all(orgIds.map((orgId) => services.storage.orgs.get(orgId)));
  return {
    apiScopes: access.scopes,
    apiOrgNames: Object.fromEntries(orgs.flatMap((org) => (org ? [[org.orgId, org.name]] : []))),
  };
}

/**
 * Every scope name an API or a gateway route declares, for discovery's `scopes_supported`
 * (the provider's own first): what a client may ask for somewhere here.
 */
export async function declaredScopeNames(services: Pick<ControlPlaneServices, 'storage'>): Promise<string[]> {
  const names = new Set<string>();
  for (const api of await services.storage.apis.list()) for (const scope of api.scopes) names.add(scope.name);
  for (const gateway of await services.storage.clients.listGateways()) {
    for (const route of gateway.metadata.gateway?.routes ?? [])
      for (const scope of routeScopes(route)) names.add(scope);
  }
  return [...names].sort();
}
