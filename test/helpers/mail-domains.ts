import type { Stores } from '../../control-plane/src/storage/interface.js';

/**
 * A mail domain the org holds proved, as a DNS proof leaves it (test/control-plane/orgs/mail-domains.test.ts
 * proves one by TXT): for suites about what a proved domain changes.
 */
export async function seedProvedMailDomain(
  storage: Pick<Stores, 'orgs'>,
  orgId: string,
  domain: string,
  now: number,
): Promise<void> {
  const domainId = `mdm_${domain.replace(/[^a-z0-9]/g, '_')}`;
  await storage.orgs.addMailDomain({
    domainId,
    orgId,
    domain,
    proofToken: 'tok',
    verifiedAt: null,
    checkedAt: null,
    failingSince: null,
    createdAt: now,
  });
  await storage.orgs.claimMailDomain(domainId, now);
}
