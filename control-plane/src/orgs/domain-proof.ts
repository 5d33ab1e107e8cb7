import { lookupTxt } from '#lib/dns/txt-lookup.js';
import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import {
  checkWellKnownAnswer,
  explainDomainProofFailure,
  type DnsProofCheck,
  type WellKnownProofCheck,
} from '#lib/orgs/domain-proof.js';
import { domainProofValue, wellKnownFileProves } from '#lib/orgs/roles.js';
import { CertificateError } from '../scan/capture-site.js';
import { scanFetchFor } from '../scan/run-scan.js';
import type { ControlPlaneServices } from '../context.js';
import type { Membership, OrgServices } from './membership.js';
import { hasRole } from '#lib/orgs/roles.js';

async function checkTxtProof(name: string, expected: string, resolvers: readonly string[]): Promise<DnsProofCheck> {
  const result = await lookupTxt(name, { resolvers });
  if (!result.ok) return { outcome: result.failure };
  return result.records.some((record) => record.trim() === expected)
    ? { outcome: 'proved' }
    : { outcome: 'wrong_value' };
}

// The fetcher's refusals of the target itself (a private address, not https), as opposed to a
// target that was asked and did not answer usably.
const TARGET_REFUSALS = new Set([
  'fetch_invalid_url',
  'fetch_not_https',
  'fetch_credentials_in_url',
  'fetch_private_address',
]);

async function checkWellKnownProof(
  services: Pick<ControlPlaneServices, 'fetcher'>,
  url: URL,
  token: string,
): Promise<WellKnownProofCheck> {
  try {
    const answer = await scanFetchFor(services)(url, {
      method: 'GET',
      verify: true,
      signal: AbortSignal.timeout(5000),
      maxBytes: 4096,
    });
    return checkWellKnownAnswer(answer.status, wellKnownFileProves(answer.body, token));
  } catch (error) {
    if (error instanceof CertificateError) return { outcome: 'certificate_failed', code: error.message };
    if (isKeyplaneError(error) && TARGET_REFUSALS.has(error.reason))
      return { outcome: 'refused', detail: error.message };
    return { outcome: 'fetch_failed', detail: isKeyplaneError(error) ? error.message : 'the site did not answer' };
  }
}

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
  const expected = domainProofValue(site.proofToken);
  const txtName = `_keyplane.${url.hostname}`;
  const wellKnownUrl = new URL('/.well-known/keyplane-site.txt', url.origin);
  const dns = await checkTxtProof(txtName, expected, services.config.dns.resolvers);
  const wellKnown = dns.outcome === 'proved' ? dns : await checkWellKnownProof(services, wellKnownUrl, site.proofToken);
  if (dns.outcome !== 'proved' && wellKnown.outcome !== 'proved') {
    const failure = explainDomainProofFailure(
      { dns, wellKnown },
      { txtName, wellKnownUrl: wellKnownUrl.href, expected },
    );
    throw fail('domain_not_verified', failure.message, {
      fields: { cause: failure.cause, checks: { dns, wellKnown } },
    });
  }
  const found = dns.outcome === 'proved' ? 'dns' : 'well-known';
  const now = services.now();
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
