import { hasTxtRecord } from '../../../lib/dns/txt-lookup.js';
import { fail } from '../../../lib/errors/keyplane-error.js';
import { domainProofValue, wellKnownFileProves } from '../../../lib/orgs/roles.js';
import { scanFetchFor } from '../scan/run-scan.js';
import type { ControlPlaneServices } from '../context.js';
import type { Membership, OrgServices } from './operations.js';
import { hasRole } from '../../../lib/orgs/roles.js';

/**
 * Proves the org controls a site's domain: a TXT record `_keyplane.<host>` or a line in
 * `https://<host>/.well-known/keyplane-site.txt`, each carrying `keyplane-site=<token>`
 * (docs/orgs.md "Proving a domain"). Only a proved site shows a seal. The TXT record is looked
 * up through the configured resolvers (`dns.resolvers`, default the system's), as agent domains are.
 */
export async function proveSiteDomain(
  services: OrgServices & Pick<ControlPlaneServices, 'fetcher' | 'config'>,
  m: Membership,
  actor: string,
  siteId: string,
): Promise<{ method: 'dns' | 'well-known'; receipt?: string }> {
  if (!hasRole(m.role, 'admin')) throw fail('forbidden', 'this needs the admin or owner role in the organization');
  const site = (await services.storage.orgs.sites(m.org.orgId)).find((s) => s.siteId === siteId);
  if (!site) throw fail('not_found', 'no such site in this organization');
  const url = new URL(site.url);
  let method: 'dns' | 'well-known' | null = null;
  if (
    await hasTxtRecord(`_keyplane.${url.hostname}`, domainProofValue(site.proofToken), {
      resolvers: services.config.dns.resolvers,
    })
  )
    method = 'dns';
  if (!method) {
    try {
      const answer = await scanFetchFor(services)(new URL('/.well-known/keyplane-site.txt', url.origin), {
        method: 'GET',
        verify: true,
        signal: AbortSignal.timeout(5000),
        maxBytes: 4096,
      });
      if (answer.status === 200 && wellKnownFileProves(answer.body, site.proofToken)) method = 'well-known';
    } catch {
      method = null;
    }
  }
  if (!method)
    throw fail(
      'domain_not_verified',
      `publish the proof as TXT at _keyplane.${url.hostname} or in ${url.origin}/.well-known/keyplane-site.txt, then try again`,
    );
  const now = services.now();
  const found = method;
  return services.storage.transaction(async (tx) => {
    await tx.orgs.markSiteVerified(siteId, now);
    const { receipt } = await services.events.record(tx, {
      type: 'org.site_verified',
      at: now,
      outcome: 'success',
      orgId: m.org.orgId,
      siteId,
      method: found,
      by: actor,
    });
    return { method: found, ...(receipt ? { receipt } : {}) };
  });
}
