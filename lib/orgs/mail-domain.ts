/**
 * Proved mail domains (docs/orgs.md#mail-domains): what an org
 * publishes, which names it may claim, and how a daily re-check turns into keeping, warning or
 * lapsing. Pure: the DNS look-up and the clock are the caller's.
 */

/** How long a proved domain survives failing re-checks before it lapses (the contract's 7-day grace). */
export const MAIL_DOMAIN_GRACE_MS = 7 * 86_400_000;
/** How often a proved domain is looked up again. */
export const MAIL_DOMAIN_RECHECK_MS = 86_400_000;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

export type MailDomainCheck = { ok: true; domain: string } | { ok: false; refusal: string };

/**
 * A mail domain as an org may claim it: a lower-case DNS name of at least two LDH labels (IDNs in
 * their A-label form), no trailing dot, no wildcard. Subdomains are claimed only by listing them.
 */
export function checkMailDomain(input: unknown): MailDomainCheck {
  if (typeof input !== 'string') return { ok: false, refusal: 'not a string' };
  const domain = input.trim().toLowerCase();
  if (domain.length === 0 || domain.length > 253) return { ok: false, refusal: 'empty or longer than 253 characters' };
  const labels = domain.split('.');
  if (labels.length < 2) return { ok: false, refusal: 'a mail domain has at least two labels' };
  if (!labels.every((label) => LABEL.test(label)))
    return { ok: false, refusal: 'labels are letters, digits and inner hyphens only' };
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return { ok: false, refusal: 'an IP address is not a domain' };
  return { ok: true, domain };
}

/** The TXT record name the proof lives at: on the exact domain, apart from site proofs (`_keyplane.`). */
export function mailDomainRecordName(domain: string): string {
  return `_keyplane-mail.${domain}`;
}

/** The TXT record value that proves the org controls the domain's DNS. */
export function mailDomainProofValue(token: string): string {
  return `keyplane-mail=${token}`;
}

/** The domain part of an address, lower-cased; null when it has none. */
export function domainOfAddress(email: string): string | null {
  const at = email.lastIndexOf('@');
  return at > 0 && at < email.length - 1 ? email.slice(at + 1).toLowerCase() : null;
}

/** Whether the address lies exactly in one of the domains (a subdomain counts only when listed itself). */
export function addressInDomains(email: string, domains: readonly string[]): boolean {
  const domain = domainOfAddress(email);
  return domain !== null && domains.includes(domain);
}

export interface MailDomainRecheck {
  /** `keep`: proved again (or within the day); `failing`: not found, within the grace; `lapse`: grace over. */
  action: 'keep' | 'failing' | 'lapse';
  /** When the first failed re-check of the current run of failures was; null once proved again. */
  failingSince: number | null;
}

/** What a re-check's outcome does to a proved domain, given when its failures began. */
export function judgeMailDomainRecheck(
  state: { failingSince: number | null },
  proved: boolean,
  now: number,
  graceMs: number = MAIL_DOMAIN_GRACE_MS,
): MailDomainRecheck {
  if (proved) return { action: 'keep', failingSince: null };
  const since = state.failingSince ?? now;
  return now - since >= graceMs ? { action: 'lapse', failingSince: since } : { action: 'failing', failingSince: since };
}

/**
 * Whether a verified address still counts as verified: once an org proves a mail domain, its
 * addresses count only on accounts that org manages (docs/orgs.md#claimed-addresses), so a
 * personal account cannot speak for an org's domain in claims, `email_domains` rules or magic links.
 * `holders` maps each proved domain to the org holding it.
 */
export function countsAsVerified(
  email: string,
  managedBy: string | undefined,
  holders: ReadonlyMap<string, string>,
): boolean {
  const domain = domainOfAddress(email);
  const holder = domain === null ? undefined : holders.get(domain);
  return holder === undefined || holder === managedBy;
}
