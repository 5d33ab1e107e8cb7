import { fail } from '#lib/errors/keyplane-error.js';
import { hasRole } from '#lib/orgs/roles.js';
import { checkProviderSettings, type ProviderSettings } from '#lib/saml/provider.js';
import { randomId } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import { loadMembership } from '../orgs/membership.js';
import type { StoredSamlProvider, Stores } from '../storage/interface.js';

export type ProviderServices = Pick<ControlPlaneServices, 'storage' | 'events' | 'now'>;

/**
 * Who manages service providers: the operator (the admin token, or the founder's session, which
 * carries `identityId`) or a signed-in org admin.
 */
export type ProviderActor = { kind: 'operator'; identityId?: string } | { kind: 'member'; identityId: string };

const by = (actor: ProviderActor) =>
  (actor.kind === 'operator' && actor.identityId === undefined ? 'admin' : 'session') as 'admin' | 'session';

/** The actor a signed-in account is: the founder's session is the operator's, like the admin token. */
export async function sessionActor(
  services: Pick<ControlPlaneServices, 'storage'>,
  identityId: string,
): Promise<ProviderActor> {
  const identity = await services.storage.identities.get(identityId);
  return identity?.founder ? { kind: 'operator', identityId } : { kind: 'member', identityId };
}

/** The orgs in which the member is admin or owner. */
async function adminOrgs(services: ProviderServices, identityId: string): Promise<string[]> {
  const orgs = await services.storage.orgs.listForMember(identityId);
  return orgs.filter((org) => hasRole(org.role, 'admin')).map((org) => org.orgId);
}

/** The providers the actor manages: all for the operator, those of their orgs for an org admin. */
export async function listProviders(services: ProviderServices, actor: ProviderActor): Promise<StoredSamlProvider[]> {
  if (actor.kind === 'operator') return services.storage.saml.listProviders();
  const orgs = await adminOrgs(services, actor.identityId);
  return orgs.length === 0 ? [] : services.storage.saml.listProviders(orgs);
}

/** One provider the actor manages; any other answers 404 exactly like an unknown id. */
export async function getProvider(
  services: ProviderServices,
  actor: ProviderActor,
  id: string,
): Promise<StoredSamlProvider> {
  const provider = /^sp_[A-Za-z0-9_-]{1,64}$/.test(id) ? await services.storage.saml.provider(id) : null;
  if (!provider) throw fail('not_found', 'no such service provider');
  if (actor.kind === 'member') {
    const orgs = await adminOrgs(services, actor.identityId);
    if (provider.orgId === null || !orgs.includes(provider.orgId)) throw fail('not_found', 'no such service provider');
  }
  return provider;
}

/** The hosts a provider's settings send assertions to or claim: its entityID (when an http(s) URL), ACS and SLO URLs. */
function claimedHosts(settings: ProviderSettings): string[] {
  const urls = [...settings.acsUrls, ...(settings.sloUrl ? [settings.sloUrl] : [])];
  if (/^https?:\/\//i.test(settings.entityId)) urls.push(settings.entityId);
  return urls.flatMap((url) => {
    try {
      return [new URL(url).hostname.toLowerCase()];
    } catch {
      return [];
    }
  });
}

/**
 * An org admin's provider must live under a domain the org proved (docs/saml.md "Who may manage
 * providers"): otherwise any account could create an org, claim a real service's entityID and
 * receive assertions at its own ACS URL. The operator (admin token, founder) is trusted as is.
 */
async function checkOrgDomains(
  services: ProviderServices,
  actor: ProviderActor,
  orgId: string | null,
  settings: ProviderSettings,
): Promise<void> {
  if (actor.kind !== 'member' || orgId === null) return;
  const proved = (await services.storage.orgs.sites(orgId))
    .filter((site) => site.verifiedAt !== null)
    .map((site) => new URL(site.url).hostname.toLowerCase());
  const outside = claimedHosts(settings).filter(
    (host) => !proved.some((domain) => host === domain || host.endsWith(`.${domain}`)),
  );
  if (outside.length > 0)
    throw fail(
      'invalid_request',
      `${outside[0]} is not under a domain your organization proved: prove it on the organization's page first`,
    );
}

/**
 * The operator's registration always wins its entityID: a provider an org registered under it is
 * removed (receipted) in the same transaction, so an org's claim never blocks the operator.
 */
async function evictOrgClaim(
  services: ProviderServices,
  tx: Stores,
  actor: ProviderActor,
  entityId: string,
  now: number,
): Promise<boolean> {
  if (actor.kind !== 'operator') return false;
  const holder = await tx.saml.providerByEntityId(entityId);
  if (!holder || holder.orgId === null) return false;
  await tx.saml.removeProvider(holder.id);
  await services.events.record(tx, {
    type: 'saml.provider_deleted',
    at: now,
    outcome: 'success',
    providerId: holder.id,
    by: by(actor),
  });
  return true;
}

/** Registers a provider; an org admin names the org (`org`, its slug), the operator may. */
export async function registerProvider(
  services: ProviderServices,
  actor: ProviderActor,
  input: Record<string, unknown>,
): Promise<{ provider: StoredSamlProvider; receipt?: string }> {
  const settings = checkProviderSettings(input);
  let orgId: string | null = null;
  if (input.org !== undefined && input.org !== null && input.org !== '') {
    if (typeof input.org !== 'string') throw fail('invalid_request', 'org must be an organization slug');
    if (actor.kind === 'member')
      orgId = (await loadMembership(services, input.org, actor.identityId, 'admin')).org.orgId;
    else {
      const org = await services.storage.orgs.getBySlug(input.org);
      if (!org) throw fail('not_found', 'no such organization');
      orgId = org.orgId;
    }
  } else if (actor.kind === 'member') {
    throw fail(
      'invalid_request',
      'org is required: service providers are registered for an organization you administer',
    );
  }
  await checkOrgDomains(services, actor, orgId, settings);
  const now = services.now();
  const provider: StoredSamlProvider = {
    id: randomId('sp_'),
    ...settings,
    orgId,
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
  return services.storage.transaction(async (tx) => {
    const inserted =
      (await tx.saml.insertProvider(provider)) ||
      ((await evictOrgClaim(services, tx, actor, provider.entityId, now)) && (await tx.saml.insertProvider(provider)));
    if (!inserted) throw fail('conflict', 'a service provider with this entity_id is registered already');
    const { receipt } = await services.events.record(tx, {
      type: 'saml.provider_registered',
      at: now,
      outcome: 'success',
      providerId: provider.id,
      entityId: provider.entityId,
      orgId,
      by: by(actor),
    });
    return { provider, ...(receipt ? { receipt } : {}) };
  });
}

/** Replaces the provider's settings (the body has the POST shape); the owning org stays. */
export async function updateProvider(
  services: ProviderServices,
  actor: ProviderActor,
  id: string,
  input: Record<string, unknown>,
): Promise<{ provider: StoredSamlProvider; receipt?: string }> {
  const before = await getProvider(services, actor, id);
  const settings = checkProviderSettings(input);
  const revision = input.revision === undefined ? before.revision : input.revision;
  if (typeof revision !== 'number' || !Number.isInteger(revision))
    throw fail('invalid_request', 'revision must be an integer');
  await checkOrgDomains(services, actor, before.orgId, settings);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const next = { ...before, ...settings, updatedAt: now };
    let updated = await tx.saml.updateProvider(next, revision);
    if (updated === 'taken' && (await evictOrgClaim(services, tx, actor, settings.entityId, now)))
      updated = await tx.saml.updateProvider(next, revision);
    if (updated === 'taken') throw fail('conflict', 'a service provider with this entity_id is registered already');
    if (!updated)
      throw fail('stale_revision', 'the service provider changed since this revision; read it again and retry');
    const { receipt } = await services.events.record(tx, {
      type: 'saml.provider_updated',
      at: now,
      outcome: 'success',
      providerId: id,
      revision: updated.revision,
      by: by(actor),
    });
    return { provider: updated, ...(receipt ? { receipt } : {}) };
  });
}

export async function deleteProvider(
  services: ProviderServices,
  actor: ProviderActor,
  id: string,
): Promise<{ receipt?: string }> {
  await getProvider(services, actor, id);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.saml.removeProvider(id))) throw fail('not_found', 'no such service provider');
    return services.events.record(tx, {
      type: 'saml.provider_deleted',
      at: now,
      outcome: 'success',
      providerId: id,
      by: by(actor),
    });
  });
}

/** The public shape of a provider (the API's and the page's). */
export function describeProvider(provider: StoredSamlProvider) {
  return {
    id: provider.id,
    entity_id: provider.entityId,
    name: provider.name,
    acs_urls: provider.acsUrls,
    slo_url: provider.sloUrl,
    certificate: provider.certificatePem,
    name_id_format: provider.nameIdFormat,
    attributes: provider.attributes,
    allow_idp_initiated: provider.allowIdpInitiated,
    want_signed_requests: provider.wantSignedRequests,
    ...(provider.accessOrgs ? { access: { orgs: provider.accessOrgs } } : {}),
    org_id: provider.orgId,
    revision: provider.revision,
    created_at: new Date(provider.createdAt).toISOString(),
    updated_at: new Date(provider.updatedAt).toISOString(),
  };
}
