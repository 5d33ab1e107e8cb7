import { fail } from '#lib/errors/keyplane-error.js';
import { checkSiteUrl } from '#lib/orgs/roles.js';
import { checkFreeText } from '#lib/accounts/username.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { OrgSite } from '../storage/interface.js';
import { NAME_MAX, requireManager, type Membership, type OrgServices } from './membership.js';

/** An organization's sites: adding one with its domain proof token, removing, promoting (docs/orgs.md#sites). */

export async function addSite(
  services: OrgServices,
  m: Membership,
  actor: string,
  input: { url: unknown; label?: unknown },
): Promise<{ site: OrgSite; receipt?: string }> {
  requireManager(m);
  const checked = checkSiteUrl(input.url);
  if (!checked.ok) throw fail('invalid_site_url', `the site URL is not usable (${checked.refusal})`);
  const label =
    input.label === undefined || input.label === null
      ? null
      : checkFreeText(input.label, NAME_MAX, 'invalid_request', 'the label') || null;
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const existing = await tx.orgs.sites(m.org.orgId);
    if (existing.some((s) => s.url === checked.url)) throw fail('conflict', 'this site is registered already');
    // The first site added becomes primary (docs/orgs.md).
    const site: OrgSite = {
      siteId: randomId('site'),
      orgId: m.org.orgId,
      url: checked.url,
      label,
      primary: existing.length === 0,
      proofToken: randomToken(24),
      verifiedAt: null,
      createdAt: now,
    };
    await tx.orgs.addSite(site);
    const { receipt } = await services.events.record(tx, {
      type: 'org.site_added',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      siteId: site.siteId,
      primary: site.primary,
      by: actor,
    });
    return { site, ...(receipt ? { receipt } : {}) };
  });
}

export async function removeSite(
  services: OrgServices,
  m: Membership,
  actor: string,
  siteId: string,
): Promise<{ receipt?: string; primary: string | null }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const site = (await tx.orgs.sites(m.org.orgId)).find((s) => s.siteId === siteId);
    if (!site || !(await tx.orgs.removeSite(m.org.orgId, siteId)))
      throw fail('not_found', 'no such site in this organization');
    // When the primary goes, the oldest remaining site takes its place so the org keeps a headline.
    let primary = (await tx.orgs.sites(m.org.orgId)).find((s) => s.primary)?.siteId ?? null;
    if (site.primary) {
      const next = (await tx.orgs.sites(m.org.orgId))[0];
      if (next) {
        await tx.orgs.setPrimary(m.org.orgId, next.siteId);
        primary = next.siteId;
      }
    }
    const { receipt } = await services.events.record(tx, {
      type: 'org.site_removed',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      siteId,
      by: actor,
    });
    return { primary, ...(receipt ? { receipt } : {}) };
  });
}

export async function promoteSite(
  services: OrgServices,
  m: Membership,
  actor: string,
  siteId: string,
): Promise<{ receipt?: string }> {
  requireManager(m);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.orgs.setPrimary(m.org.orgId, siteId))) throw fail('not_found', 'no such site in this organization');
    return services.events.record(tx, {
      type: 'org.site_promoted',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      siteId,
      by: actor,
    });
  });
}
