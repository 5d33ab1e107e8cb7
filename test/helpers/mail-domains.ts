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

/**
 * Olivia (`usr_owner`), owner of org Acme (`org_acme`, slug `acme`) holding the proved mail domain
 * `acme.example`, written straight to storage: the start of the connection and SCIM suites. With
 * `org: false`, Olivia alone (a suite that makes its own orgs).
 */
export async function seedAcmeOwner(
  storage: Pick<Stores, 'orgs' | 'identities'>,
  now: number,
  options: { org?: boolean } = {},
): Promise<void> {
  await storage.identities.create({
    identityId: 'usr_owner',
    username: 'olivia',
    displayName: '',
    preferences: {},
    founder: false,
    createdAt: now,
    updatedAt: now,
  });
  if (options.org === false) return;
  await storage.orgs.create(
    { orgId: 'org_acme', slug: 'acme', name: 'Acme', website: null, createdAt: now },
    'usr_owner',
  );
  await seedProvedMailDomain(storage, 'org_acme', 'acme.example', now);
}
