import { parse as parseDomain } from 'tldts';
import { autoResponse, autoUrl, getFirstHeader, type Capture } from '../capture.js';
import type { Expectation, TestOutcome } from '../expectations.js';
import { isHtmlContentType, readHtmlFacts } from '../html.js';

const ORDER: Expectation[] = [
  'sri-implemented-and-all-scripts-loaded-securely',
  'sri-implemented-and-external-scripts-loaded-securely',
  'sri-implemented-but-external-scripts-not-loaded-securely',
  'sri-not-implemented-but-external-scripts-loaded-securely',
  'sri-not-implemented-and-external-scripts-not-loaded-securely',
  'sri-not-implemented-response-not-html',
];
function worse(next: Expectation, current: Expectation | null): Expectation {
  if (current === null) return next;
  return ORDER.indexOf(next) > ORDER.indexOf(current) ? next : current;
}

const PASSING: Expectation[] = [
  'sri-implemented-and-all-scripts-loaded-securely',
  'sri-implemented-and-external-scripts-loaded-securely',
  'sri-not-implemented-response-not-html',
  'sri-not-implemented-but-all-scripts-loaded-from-secure-origin',
  'sri-not-implemented-but-no-scripts-loaded',
];

/**
 * Subresource Integrity on scripts from another registrable domain (SRI §3.3). "Same origin"
 * means the same registrable domain; a protocol-relative `//x` source counts as foreign and insecure.
 */
export function testSubresourceIntegrity(capture: Capture): TestOutcome {
  const outcome = (result: Expectation, data: Record<string, unknown> = {}): TestOutcome => ({
    name: 'subresource-integrity',
    result,
    pass: PASSING.includes(result),
    data,
  });
  const response = autoResponse(capture);
  const pageUrl = autoUrl(capture);
  if (!response || !pageUrl) return outcome('sri-not-implemented-but-no-scripts-loaded');
  if (!isHtmlContentType(getFirstHeader(response, 'content-type')))
    return outcome('sri-not-implemented-response-not-html');
  const scripts = readHtmlFacts(response.body ?? '').scripts;
  const pageDomain = parseDomain(pageUrl.hostname).domain ?? pageUrl.hostname;
  const external: Record<string, { integrity: string | null; crossorigin: string | null }> = {};
  let result: Expectation | null = null;
  let foreign = false;
  for (const script of scripts) {
    const src = script['src']?.trim();
    if (!src) continue;
    const integrity = script['integrity'] || null;
    const relativeProtocol = /^\/\/[^/]/.test(src);
    const absolute = /^https?:\/\//i.test(src);
    let sameDomain = true;
    let scheme: string | null = null;
    if (absolute) {
      let url: URL | null;
      try {
        url = new URL(src);
      } catch {
        url = null;
      }
      scheme = url?.protocol ?? null;
      const domain = url ? (parseDomain(url.hostname).domain ?? url.hostname) : null;
      sameDomain = domain === pageDomain;
    }
    const relativeOrigin = !absolute && !relativeProtocol;
    const secureOrigin = relativeOrigin || (sameDomain && !relativeProtocol);
    const secureScheme = scheme === 'https:' || (relativeOrigin && pageUrl.protocol === 'https:');
    if (!secureOrigin) {
      foreign = true;
      external[src] = { integrity, crossorigin: script['crossorigin'] ?? null };
      if (integrity && !secureScheme)
        result = worse('sri-implemented-but-external-scripts-not-loaded-securely', result);
      else if (!integrity && secureScheme)
        result = worse('sri-not-implemented-but-external-scripts-loaded-securely', result);
      else if (!integrity) result = worse('sri-not-implemented-and-external-scripts-not-loaded-securely', result);
    } else if (integrity && secureScheme && result === null) {
      result = 'sri-implemented-and-all-scripts-loaded-securely';
    }
  }
  if (scripts.length === 0) return outcome('sri-not-implemented-but-no-scripts-loaded');
  if (result === null) {
    result = foreign
      ? 'sri-implemented-and-external-scripts-loaded-securely'
      : 'sri-not-implemented-but-all-scripts-loaded-from-secure-origin';
  }
  return outcome(result, Object.keys(external).length > 0 ? { external } : {});
}
