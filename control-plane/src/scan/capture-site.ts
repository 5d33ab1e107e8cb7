import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import type { Capture, CapturedResponse } from '#lib/scan/capture.js';

/** One request of a scan, made by the guarded fetcher: never follows redirects itself. */
export interface ScanRequest {
  method: 'GET' | 'OPTIONS';
  headers?: Record<string, string>;
  /** False retries a certificate that did not verify, so the scan can still grade what it sees. */
  verify: boolean;
  signal: AbortSignal;
  maxBytes: number;
}

export interface ScanAnswer {
  status: number;
  headers: Array<[string, string]>;
  body: string;
}

/**
 * The fetch a scan is made of. Implementations go through the guarded fetcher: the address is
 * resolved and checked on every request (so on every redirect hop), refusals are KeyplaneErrors
 * with a `fetch_*` reason, and a certificate failure is a {@link CertificateError}.
 */
export type ScanFetch = (url: URL, request: ScanRequest) => Promise<ScanAnswer>;

export class CertificateError extends Error {
  override name = 'CertificateError';
}

/** Where the scan's CORS probe says it comes from (never a real site). */
export const CORS_PROBE_ORIGIN = 'https://scan.keyplane.invalid';
export const SCAN_BUDGET_MS = 10_000;
export const SCAN_MAX_BYTES = 2 * 1024 * 1024;
const MAX_REDIRECTS = 10;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface CaptureOptions {
  fetch: ScanFetch;
  /** Where the plain-http leg starts; default `http://<host>/<path>` (port 80). */
  httpUrl?: string;
  budgetMs?: number;
}

// The fetcher's refusals of the target itself; anything else (timeouts, resets, oversize bodies)
// means that leg did not answer usably.
const TARGET_REFUSALS = new Set([
  'fetch_invalid_url',
  'fetch_not_https',
  'fetch_credentials_in_url',
  'fetch_private_address',
  'scan_target_refused',
]);

function isRefusal(error: unknown): boolean {
  return isKeyplaneError(error) && TARGET_REFUSALS.has(error.reason);
}

/** Turns the fetcher's refusal of a target into the scan's refusal; everything else is passed on. */
function refusal(error: unknown): never {
  if (isKeyplaneError(error) && error.reason !== 'scan_target_refused') {
    throw fail('scan_target_refused', `the scan was refused: ${error.message}`);
  }
  throw error;
}

async function fetchOne(fetch: ScanFetch, url: URL, request: Omit<ScanRequest, 'verify'>): Promise<CapturedResponse> {
  try {
    const answer = await fetch(url, { ...request, verify: true });
    return { url: url.href, status: answer.status, headers: answer.headers, body: answer.body, verified: true };
  } catch (error) {
    if (!(error instanceof CertificateError)) throw error;
    const answer = await fetch(url, { ...request, verify: false });
    return { url: url.href, status: answer.status, headers: answer.headers, body: answer.body, verified: false };
  }
}

/**
 * Follows a chain by hand (each hop is a fresh, checked request), recording every response.
 * A loop or more than 10 redirects ends the chain where it is, which then grades as it stands.
 */
async function followChain(fetch: ScanFetch, start: URL, signal: AbortSignal): Promise<CapturedResponse[]> {
  const chain: CapturedResponse[] = [];
  const seen = new Set<string>();
  let current = start;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    seen.add(current.href);
    const response = await fetchOne(fetch, current, { method: 'GET', signal, maxBytes: SCAN_MAX_BYTES });
    chain.push(response);
    const location = response.headers.find(([n]) => n.toLowerCase() === 'location')?.[1];
    if (!REDIRECTS.has(response.status) || !location) break;
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      break;
    }
    if ((next.protocol !== 'https:' && next.protocol !== 'http:') || seen.has(next.href)) break;
    current = next;
  }
  return chain;
}

/** A leg that does not answer at all (refused, reset, timed out) is "nothing answered"; a refused target is not. */
async function leg(fetch: ScanFetch, start: URL, signal: AbortSignal): Promise<CapturedResponse[] | null> {
  try {
    return await followChain(fetch, start, signal);
  } catch (error) {
    if (isRefusal(error)) refusal(error);
    return null;
  }
}

async function optional(
  fetch: ScanFetch,
  url: URL,
  request: Omit<ScanRequest, 'verify'>,
): Promise<CapturedResponse | null> {
  try {
    return await fetchOne(fetch, url, request);
  } catch (error) {
    if (isRefusal(error)) refusal(error);
    return null;
  }
}

/**
 * Captures a site the way the MDN HTTP Observatory's retriever does: the https chain and the
 * plain-http chain, a CORS preflight from a foreign origin at the final URL, and the Flash and
 * Silverlight policy files; all within one 10-second budget and a 2 MB cap per body.
 */
export async function captureSite(url: string, options: CaptureOptions): Promise<Capture> {
  const target = new URL(url);
  const signal = AbortSignal.timeout(options.budgetMs ?? SCAN_BUDGET_MS);
  const httpStart = new URL(options.httpUrl ?? `http://${target.hostname}${target.pathname}${target.search}`);
  const [https, http] = await Promise.all([leg(options.fetch, target, signal), leg(options.fetch, httpStart, signal)]);
  const final = https?.at(-1) ?? http?.at(-1) ?? null;
  const capture: Capture = {
    url: target.href,
    http,
    https,
    cors: null,
    corsOrigin: CORS_PROBE_ORIGIN,
    crossdomain: null,
    clientaccesspolicy: null,
  };
  if (!final) return capture;
  const finalUrl = new URL(final.url);
  const small = { signal, maxBytes: 65_536 };
  const [cors, crossdomain, clientaccesspolicy] = await Promise.all([
    optional(options.fetch, finalUrl, {
      ...small,
      method: 'OPTIONS',
      headers: { origin: CORS_PROBE_ORIGIN, 'access-control-request-method': 'GET' },
    }),
    optional(options.fetch, new URL('/crossdomain.xml', finalUrl), { ...small, method: 'GET' }),
    optional(options.fetch, new URL('/clientaccesspolicy.xml', finalUrl), { ...small, method: 'GET' }),
  ]);
  capture.cors = cors;
  capture.crossdomain = crossdomain?.status === 200 ? crossdomain : null;
  capture.clientaccesspolicy = clientaccesspolicy?.status === 200 ? clientaccesspolicy : null;
  return capture;
}
