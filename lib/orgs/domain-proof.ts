/** What the TXT look-up at `_keyplane.<host>` found. */
export type DnsProofCheck =
  { outcome: 'proved' } | { outcome: 'no_records' } | { outcome: 'wrong_value' } | { outcome: 'unreachable' };

/** What fetching `https://<host>/.well-known/keyplane-site.txt` found. */
export type WellKnownProofCheck =
  | { outcome: 'proved' }
  | { outcome: 'not_published'; status: number }
  | { outcome: 'http_status'; status: number }
  | { outcome: 'wrong_content' }
  | { outcome: 'certificate_failed'; code: string }
  | { outcome: 'refused'; detail: string }
  | { outcome: 'fetch_failed'; detail: string };

/**
 * Why a domain proof failed, most telling first: a proof that was found but carries another value
 * (`wrong_content`) beats a file whose certificate did not verify (`certificate_failed`), which
 * beats a site or resolver that did not answer (`fetch_failed`); `not_published` only when both
 * places were reachable and empty.
 */
export type DomainProofCause = 'wrong_content' | 'certificate_failed' | 'fetch_failed' | 'not_published';

export interface DomainProofFailure {
  cause: DomainProofCause;
  /** One sentence per place looked at, then what to do; for the person who clicked "Check domain". */
  message: string;
}

/** Statuses that mean "there is no such file" rather than "the site is broken". */
const ABSENT_STATUSES = new Set([404, 410]);

/** Classifies the well-known file's answer once it was fetched. */
export function checkWellKnownAnswer(status: number, proves: boolean): WellKnownProofCheck {
  if (status === 200) return proves ? { outcome: 'proved' } : { outcome: 'wrong_content' };
  return ABSENT_STATUSES.has(status) ? { outcome: 'not_published', status } : { outcome: 'http_status', status };
}

function causeOf(dns: DnsProofCheck, file: WellKnownProofCheck): DomainProofCause {
  if (dns.outcome === 'wrong_value' || file.outcome === 'wrong_content') return 'wrong_content';
  if (file.outcome === 'certificate_failed') return 'certificate_failed';
  if (dns.outcome === 'unreachable' || ['http_status', 'refused', 'fetch_failed'].includes(file.outcome))
    return 'fetch_failed';
  return 'not_published';
}

function describeDns(dns: DnsProofCheck, name: string, expected: string): string {
  switch (dns.outcome) {
    case 'proved':
      return `the TXT record at ${name} matches`;
    case 'no_records':
      return `there is no TXT record at ${name}`;
    case 'wrong_value':
      return `the TXT records at ${name} do not include ${expected}`;
    case 'unreachable':
      return `the DNS resolvers did not answer for ${name}`;
  }
}

function describeFile(file: WellKnownProofCheck, url: string, expected: string): string {
  switch (file.outcome) {
    case 'proved':
      return `${url} carries the proof`;
    case 'not_published':
      return `${url} answered ${file.status} (not published)`;
    case 'http_status':
      return `${url} answered HTTP ${file.status} instead of 200`;
    case 'wrong_content':
      return `${url} was fetched but has no line ${expected} (wrong content)`;
    case 'certificate_failed':
      return `${url} could not be fetched because its TLS certificate did not verify (${file.code})`;
    case 'refused':
      return `${url} was not fetched: ${file.detail}`;
    case 'fetch_failed':
      return `${url} could not be fetched: ${file.detail}`;
  }
}

/**
 * Explains a failed domain proof in the words of what actually happened at each place, so that
 * a person whose file is published but served with a broken certificate is not told to publish it.
 */
export function explainDomainProofFailure(
  checks: { dns: DnsProofCheck; wellKnown: WellKnownProofCheck },
  where: { txtName: string; wellKnownUrl: string; expected: string },
): DomainProofFailure {
  const cause = causeOf(checks.dns, checks.wellKnown);
  const found = `${describeDns(checks.dns, where.txtName, where.expected)}, and ${describeFile(checks.wellKnown, where.wellKnownUrl, where.expected)}.`;
  const next: Record<DomainProofCause, string> = {
    wrong_content: `Publish exactly ${where.expected} (the token shown for this site), then try again.`,
    certificate_failed: 'Serve the file with a certificate that browsers trust, or use the TXT record, then try again.',
    fetch_failed: 'Make the site or the DNS answer, then try again.',
    not_published: `Publish ${where.expected} as a TXT record at ${where.txtName} or as a line of ${where.wellKnownUrl}, then try again.`,
  };
  return { cause, message: `Domain not verified: ${found} ${next[cause]}` };
}
