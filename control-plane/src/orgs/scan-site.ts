import { fail } from '#lib/errors/keyplane-error.js';
import { hasRole } from '#lib/orgs/roles.js';
import type { Rating } from '#lib/scan/rating.js';
import { checkScanUrl } from '../scan/public-scan.js';
import { runScan, type ScanServices } from '../scan/run-scan.js';
import type { Membership } from './membership.js';

/**
 * `POST /org/{slug}/scan`: the primary site by default, a registered `siteId`, or a `website`
 * override (graded but kept out of every site's history).
 */
export async function scanOrgSite(
  services: ScanServices,
  m: Membership,
  input: { siteId?: string; website?: string },
): Promise<{ rating: Rating; siteId: string | null; receipt?: string }> {
  if (!hasRole(m.role, 'admin')) throw fail('forbidden', 'this needs the admin or owner role in the organization');
  if (input.website) {
    const { url } = checkScanUrl(input.website);
    return { ...(await runScan(services, url, { siteId: null, trigger: 'org' })), siteId: null };
  }
  const sites = await services.storage.orgs.sites(m.org.orgId);
  const site = input.siteId ? sites.find((s) => s.siteId === input.siteId) : sites.find((s) => s.primary);
  if (!site)
    throw fail(
      'not_found',
      input.siteId ? 'no such site in this organization' : 'the organization has no site yet; add one first',
    );
  return { ...(await runScan(services, site.url, { siteId: site.siteId, trigger: 'org' })), siteId: site.siteId };
}
