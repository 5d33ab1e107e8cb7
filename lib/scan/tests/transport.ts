import { getHeaders, type Capture, type PreloadLookup } from '../capture.js';
import type { Expectation, TestOutcome } from '../expectations.js';

// The Observatory's "six months" (a white lie: 180 days, not 182.5).
const SIX_MONTHS = 15_552_000;
// hstspreload.org's submission requirements: one year, includeSubDomains and preload.
const PRELOAD_MIN_MAX_AGE = 31_536_000;

export interface HstsHeader {
  maxAge: number | null;
  includeSubDomains: boolean;
  preload: boolean;
}

/** Parses Strict-Transport-Security (RFC 6797 §6.1); throws when the header is unusable. */
export function parseHsts(value: string): HstsHeader {
  // A comma means the header was sent twice and joined (RFC 9110 §5.3); RFC 6797 §8.1 keeps only the first.
  if (value.includes(',')) throw new Error('header set more than once');
  const parsed: HstsHeader = { maxAge: null, includeSubDomains: false, preload: false };
  for (const raw of value.split(';')) {
    const directive = raw.trim().toLowerCase();
    if (directive.startsWith('max-age=')) {
      const n = Number.parseInt(directive.slice(8).replace(/^"|"$/g, ''), 10);
      if (!Number.isFinite(n) || n < 0) throw new Error('max-age is not a number');
      parsed.maxAge = n;
    } else if (directive === 'includesubdomains') parsed.includeSubDomains = true;
    else if (directive === 'preload') parsed.preload = true;
  }
  if (parsed.maxAge === null) throw new Error('max-age missing');
  return parsed;
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
}

/** Strict-Transport-Security on the final https response, with hstspreload.org eligibility as evidence. */
export function testStrictTransportSecurity(capture: Capture, preloaded: PreloadLookup): TestOutcome {
  const outcome = (result: Expectation, data: Record<string, unknown> = {}): TestOutcome => ({
    name: 'strict-transport-security',
    result,
    pass: result === 'hsts-implemented-max-age-at-least-six-months' || result === 'hsts-preloaded',
    data,
  });
  const response = capture.https?.at(-1) ?? null;
  if (!response) return outcome('hsts-not-implemented-no-https');
  const host = hostOf(capture.url);
  const onList = host ? preloaded(host) : null;
  if (onList) return outcome('hsts-preloaded', { preloaded: true, includeSubDomains: onList.includeSubDomains });
  if (!response.verified) return outcome('hsts-invalid-cert');
  const header = getHeaders(response, 'strict-transport-security')[0];
  if (header === undefined) return outcome('hsts-not-implemented');
  const value = header.slice(0, 1024);
  let hsts: HstsHeader;
  try {
    hsts = parseHsts(value);
  } catch (error) {
    return outcome('hsts-header-invalid', { header: value, error: (error as Error).message });
  }
  const redirection = testRedirection(capture, preloaded);
  const preloadEligible =
    (hsts.maxAge ?? 0) >= PRELOAD_MIN_MAX_AGE &&
    hsts.includeSubDomains &&
    hsts.preload &&
    (redirection.result === 'redirection-to-https' || redirection.result === 'redirection-all-redirects-preloaded');
  return outcome(
    (hsts.maxAge ?? 0) >= SIX_MONTHS
      ? 'hsts-implemented-max-age-at-least-six-months'
      : 'hsts-implemented-max-age-less-than-six-months',
    { header: value, ...hsts, preloadEligible },
  );
}

/** Redirection: does plain http go to https, first hop on the same host? */
export function testRedirection(capture: Capture, preloaded: PreloadLookup): TestOutcome {
  const outcome = (result: Expectation, data: Record<string, unknown> = {}): TestOutcome => ({
    name: 'redirection',
    result,
    pass: ['redirection-to-https', 'redirection-not-needed-no-http', 'redirection-all-redirects-preloaded'].includes(
      result,
    ),
    data,
  });
  const chain = capture.http;
  if (!chain || chain.length === 0) return outcome('redirection-not-needed-no-http');
  const route = chain.map((r) => r.url);
  if (chain.some((r) => !r.verified)) return outcome('redirection-invalid-cert', { route });
  const urls = route.map((u) => new URL(u));
  if (urls.every((u) => preloaded(u.hostname) !== null))
    return outcome('redirection-all-redirects-preloaded', { route });
  if (urls.length === 1) return outcome('redirection-missing', { route });
  if (urls.at(-1)!.protocol !== 'https:') return outcome('redirection-not-to-https', { route });
  if (urls[1]!.protocol === 'http:') return outcome('redirection-not-to-https-on-initial-redirection', { route });
  if (urls[0]!.hostname !== urls[1]!.hostname) return outcome('redirection-off-host-from-http', { route });
  return outcome('redirection-to-https', { route });
}
