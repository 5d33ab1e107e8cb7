import { countsAsVerified, domainOfAddress } from '#lib/orgs/mail-domain.js';
import type { Identity, StoredEmail, Stores } from '../storage/interface.js';

type Address = Pick<StoredEmail, 'email' | 'verifiedAt'>;

/**
 * The verified addresses of this account that an org claims (docs/orgs.md#claimed-addresses): those
 * under a mail domain an org has proved, when that org does not manage the account; address → the
 * claiming org's id. One read, and none for an account without verified addresses.
 */
export async function claimingOrgs(
  storage: Pick<Stores, 'orgs'>,
  identity: Pick<Identity, 'managedBy'> | null,
  emails: readonly Address[],
): Promise<Map<string, string>> {
  const claimed = new Map<string, string>();
  const domains = new Set<string>();
  for (const e of emails) {
    const domain = e.verifiedAt === null ? null : domainOfAddress(e.email);
    if (domain) domains.add(domain);
  }
  if (domains.size === 0) return claimed;
  const holders = new Map(
    (await storage.orgs.mailDomainHolders([...domains])).map(({ domain, orgId }) => [domain, orgId]),
  );
  for (const e of emails)
    if (e.verifiedAt !== null && !countsAsVerified(e.email, identity?.managedBy, holders))
      claimed.set(e.email, holders.get(domainOfAddress(e.email)!)!);
  return claimed;
}

/**
 * Addresses as everything that trusts them sees them: a claimed address (above) reads as
 * unverified, in claims, `email_domains` rules, FedCM, SAML and magic links.
 */
export async function countedEmails<E extends Address>(
  storage: Pick<Stores, 'orgs'>,
  identity: Pick<Identity, 'managedBy'> | null,
  emails: readonly E[],
): Promise<E[]> {
  const claimed = await claimingOrgs(storage, identity, emails);
  return emails.map((e) => (claimed.has(e.email) ? { ...e, verifiedAt: null } : e));
}

/** Whether one verified address of this account still counts (a magic link's target, at request and redemption). */
export async function addressStillCounts(
  storage: Pick<Stores, 'orgs' | 'identities'>,
  email: Pick<StoredEmail, 'email' | 'verifiedAt' | 'identityId'>,
): Promise<boolean> {
  if (email.verifiedAt === null) return false;
  const identity = await storage.identities.get(email.identityId);
  return !(await claimingOrgs(storage, identity, [email])).has(email.email);
}
