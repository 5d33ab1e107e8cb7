import { fail } from '#lib/errors/keyplane-error.js';
import { hasTxtRecord } from '#lib/dns/txt-lookup.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import {
  checkMailDomain,
  judgeMailDomainRecheck,
  MAIL_DOMAIN_GRACE_MS,
  MAIL_DOMAIN_RECHECK_MS,
  mailDomainProofValue,
  mailDomainRecordName,
} from '#lib/orgs/mail-domain.js';
import type { AssuranceLevel } from '#lib/assurance/assurance.js';
import type { ControlPlaneServices } from '../context.js';
import type { OrgMailDomain } from '../storage/interface.js';
import { requireOwnerAtSensitive, type Membership, type OrgServices } from './membership.js';

/** Proved mail domains: adding one, proving it by DNS TXT, removing it, the daily re-check (docs/orgs.md#mail-domains). */

export type MailDomainServices = OrgServices & Pick<ControlPlaneServices, 'config'>;

/** What the org publishes to prove a domain. */
export interface MailDomainRecord {
  name: string;
  type: 'TXT';
  value: string;
}

export interface MailDomainView {
  domain: string;
  verified: boolean;
  record: MailDomainRecord;
  verifiedAt: string | null;
  /** While a proved domain's re-checks fail: when it lapses unless the record comes back. */
  lapsesAt: string | null;
}

/** Who asks: the member and the assurance of their session now. */
export interface OwnerRequest {
  membership: Membership;
  identityId: string;
  assurance: AssuranceLevel;
}

export function mailDomainRecord(d: Pick<OrgMailDomain, 'domain' | 'proofToken'>): MailDomainRecord {
  return { name: mailDomainRecordName(d.domain), type: 'TXT', value: mailDomainProofValue(d.proofToken) };
}

export function viewMailDomain(d: OrgMailDomain, graceMs: number = MAIL_DOMAIN_GRACE_MS): MailDomainView {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    domain: d.domain,
    verified: d.verifiedAt !== null,
    record: mailDomainRecord(d),
    verifiedAt: iso(d.verifiedAt),
    lapsesAt: d.verifiedAt !== null && d.failingSince !== null ? iso(d.failingSince + graceMs) : null,
  };
}

function parseDomain(input: unknown): string {
  const checked = checkMailDomain(input);
  if (!checked.ok) throw fail('invalid_request', `the mail domain is not usable (${checked.refusal})`);
  return checked.domain;
}

async function findMailDomain(services: OrgServices, m: Membership, domain: unknown): Promise<OrgMailDomain> {
  const checked = checkMailDomain(domain);
  const found = checked.ok ? await services.storage.orgs.mailDomain(m.org.orgId, checked.domain) : null;
  if (!found) throw fail('not_found', 'this organization lists no such mail domain');
  return found;
}

export async function listMailDomains(services: MailDomainServices, m: Membership): Promise<MailDomainView[]> {
  return (await services.storage.orgs.mailDomains(m.org.orgId)).map((d) => viewMailDomain(d, MAIL_DOMAIN_GRACE_MS));
}

/** Lists a domain for proof and answers the TXT record to publish; listing it again answers the same record. */
export async function addMailDomain(
  services: OrgServices,
  who: OwnerRequest,
  input: unknown,
): Promise<{ domain: string; record: MailDomainRecord; receipt?: string }> {
  requireOwnerAtSensitive(who.membership, who.assurance);
  const domain = parseDomain(input);
  const orgId = who.membership.org.orgId;
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    const existing = await tx.orgs.mailDomain(orgId, domain);
    if (existing) return { domain, record: mailDomainRecord(existing) };
    const entry: OrgMailDomain = {
      domainId: randomId('mdm'),
      orgId,
      domain,
      proofToken: randomToken(24),
      verifiedAt: null,
      checkedAt: null,
      failingSince: null,
      createdAt: now,
    };
    if (!(await tx.orgs.addMailDomain(entry))) throw fail('conflict', 'this mail domain was listed meanwhile');
    const { receipt } = await services.events.record(tx, {
      type: 'org.mail_domain_added',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: who.identityId },
      orgId,
      domainId: entry.domainId,
    });
    return { domain, record: mailDomainRecord(entry), ...(receipt ? { receipt } : {}) };
  });
}

/**
 * Looks the TXT record up on the exact domain (`_keyplane-mail.<domain>`; a site proof never
 * counts) and claims the domain for the org. The first org to prove a domain holds it: another
 * org's proof is refused with `domain_claimed`, and the operator settles disputes.
 */
export async function verifyMailDomain(
  services: MailDomainServices,
  who: OwnerRequest,
  domainInput: unknown,
): Promise<{ domain: string; verified: true; receipt?: string }> {
  requireOwnerAtSensitive(who.membership, who.assurance);
  const entry = await findMailDomain(services, who.membership, domainInput);
  const holder = await services.storage.orgs.mailDomainHolder(entry.domain);
  if (holder && holder.orgId !== entry.orgId)
    throw fail('domain_claimed', 'another organization has proved this mail domain; the operator settles disputes');
  if (holder) return { domain: entry.domain, verified: true };
  const record = mailDomainRecord(entry);
  if (!(await hasTxtRecord(record.name, record.value, { resolvers: services.config.dns.resolvers })))
    throw fail('domain_not_verified', `no TXT record ${record.name} with the value ${record.value} was found`, {
      fields: { cause: 'not_published' },
    });
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.orgs.claimMailDomain(entry.domainId, now)))
      throw fail('domain_claimed', 'another organization has proved this mail domain; the operator settles disputes');
    const { receipt } = await services.events.record(tx, {
      type: 'org.mail_domain_verified',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: who.identityId },
      orgId: entry.orgId,
      domainId: entry.domainId,
    });
    return { domain: entry.domain, verified: true as const, ...(receipt ? { receipt } : {}) };
  });
}

export async function removeMailDomain(
  services: OrgServices,
  who: OwnerRequest,
  domainInput: unknown,
): Promise<{ receipt?: string }> {
  requireOwnerAtSensitive(who.membership, who.assurance);
  const entry = await findMailDomain(services, who.membership, domainInput);
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.orgs.removeMailDomain(entry.orgId, entry.domainId)))
      throw fail('not_found', 'this organization lists no such mail domain');
    return services.events.record(tx, {
      type: 'org.mail_domain_removed',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: who.identityId },
      orgId: entry.orgId,
      domainId: entry.domainId,
    });
  });
}

export type MailDomainRecheckServices = MailDomainServices & Pick<ControlPlaneServices, 'state'>;

const LEASE_KEY = 'orgs:mail-domain-recheck-lease';
const CHECK_EVERY_MS = 15 * 60_000;

/**
 * One pass of the daily re-check: every proved domain not checked for a day is looked up again.
 * A missing record starts the grace period (7 days); once it is over
 * the domain lapses (`org.mail_domain_lapsed`) and another org may prove it. An unreachable
 * resolver counts as a failure too: the grace covers outages. One replica runs a pass (a lease in
 * shared state). Returns the domain ids that lapsed.
 */
export async function recheckMailDomains(
  services: MailDomainRecheckServices,
  holder: string = randomId('mdr'),
): Promise<string[]> {
  if (!(await services.state.setIfAbsent(LEASE_KEY, holder, CHECK_EVERY_MS))) return [];
  const lapsed: string[] = [];
  try {
    for (const entry of await services.storage.orgs.mailDomainsDue(services.now() - MAIL_DOMAIN_RECHECK_MS)) {
      const record = mailDomainRecord(entry);
      const proved = await hasTxtRecord(record.name, record.value, { resolvers: services.config.dns.resolvers });
      const now = services.now();
      const judged = judgeMailDomainRecheck(entry, proved, now);
      await services.storage.transaction(async (tx) => {
        await tx.orgs.recordMailDomainCheck(entry.domainId, now, judged.failingSince, judged.action === 'lapse');
        if (judged.action !== 'lapse') return;
        lapsed.push(entry.domainId);
        await services.events.record(tx, {
          type: 'org.mail_domain_lapsed',
          at: now,
          outcome: 'success',
          actor: { type: 'system' },
          orgId: entry.orgId,
          domainId: entry.domainId,
        });
      });
    }
  } finally {
    if ((await services.state.get(LEASE_KEY)) === holder) await services.state.del(LEASE_KEY);
  }
  return lapsed;
}

/** Runs {@link recheckMailDomains} every 15 minutes until the returned function is called. */
export function startMailDomainRechecks(services: MailDomainRecheckServices): () => void {
  const holder = randomId('mdr');
  const timer = setInterval(() => void recheckMailDomains(services, holder).catch(() => undefined), CHECK_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
