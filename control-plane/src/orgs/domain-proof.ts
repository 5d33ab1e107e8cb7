import { resolveTxt } from 'node:dns/promises';
import { fail } from '../../../lib/errors/keyplane-error.js';
import { txtRecordsProve, wellKnownFileProves } from '../../../lib/orgs/roles.js';
import { scanFetchFor } from '../scan/run-scan.js';
import type { ControlPlaneServices } from '../context.js';
import type { Membership, OrgServices } from './operations.js';
import { hasRole } from '../../../lib/orgs/roles.js';

export type TxtLookup = (name: string) => Promise<string[][]>;

/**
 * Proves the org controls a site's domain: a TXT record `_keyplane.<host>` or a line in
 * `https://<host>/.well-known/keyplane-site.txt`, each carrying `keyplane-site=<token>`
 * (docs/orgs.md "Proving a domain"). Only a proved site shows a seal.
 */
export async function proveSiteDomain(
  services: OrgServices & Pick<ControlPlaneServices, 'fetcher'>,
  m: Membership,
  actor: string,
  siteId: string,
  lookupTxt: TxtLookup = resolveTxt,
): Promise<{ method: 'dns' | 'well-known'; receipt?: string }> {
  if (!hasRole(m.role, 'admin')) throw fail('forbidden', 'this needs the admin or owner role in the organization');
  const site = (await services.storage.orgs.sites(m.org.orgId)).find((s) => s.siteId === siteId);
  if (!site) throw fail('not_found', 'no such site in this organization');
  const url = new URL(site.url);
  let method: 'dns' | 'well-known' | null = null;
  const records = await lookupTxt(`_keyplane.${url.hostname}`).catch(() => [] as string[][]);
  if (txtRecordsProve(records, site.proofToken)) method = 'dns';
  if (!method) {
    try {
      const answer = await scanFetchFor(services)(new URL('/.well-known/keyplane-site.txt', url.origin), {
        method: 'GET', verify: true, signal: AbortSignal.timeout(5000), maxBytes: 4096,
      });
      if (answer.status === 200 && wellKnownFileProves(answer.body, site.proofToken)) method = 'well-known';
    } catch {
      method = null;
    }
  }
  if (!method) throw fail('domain_not_verified', `publish the proof as TXT at _keyplane.${url.hostname} or in ${url.origin}/.well-known/keyplane-site.txt, then try again`);
  const now = services.now();
  const found = method;
  return services.storage.transaction(async (tx) => {
    await tx.orgs.markSiteVerified(siteId, now);
    const { receipt } = await services.events.record(tx, { type: 'org.site_verified', at: now, outcome: 'success', orgId: m.org.orgId, siteId, method: found, by: actor });
    return { method: found, ...(receipt ? { receipt } : {}) };
  });
}
