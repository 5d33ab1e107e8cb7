import { createRequire } from 'node:module';
import type { Cookie } from 'set-cookie-parser';
import { autoResponse, getHeaders, type Capture, type CapturedResponse } from '../capture.js';
import type { Expectation, TestOutcome } from '../expectations.js';

/**
 * Loaded with require, at once: set-cookie-parser is an ES module that light-my-request (fastify's
 * `inject`) loads with require() too, and Node.js 20 fails such a require() with "Unexpected module
 * status 0" while an import() of the same module is still loading in the process (seen in CI).
 */
const { parseSetCookie } = createRequire(import.meta.url)('set-cookie-parser') as typeof import('set-cookie-parser');

// Worst last: the cookie test reports the worst finding over all cookies.
const ORDER: Expectation[] = [
  'cookies-without-secure-flag-but-protected-by-hsts',
  'cookies-without-secure-flag',
  'cookies-session-without-secure-flag-but-protected-by-hsts',
  'cookies-samesite-flag-invalid',
  'cookies-anticsrf-without-samesite-flag',
  'cookies-session-without-httponly-flag',
  'cookies-session-without-secure-flag',
];
const IGNORED = new Set(['heroku-session-affinity']);

function worse(next: Expectation, current: Expectation | null): Expectation {
  if (current === null) return next;
  return ORDER.indexOf(next) > ORDER.indexOf(current) ? next : current;
}

function hasInvalidSameSite(raw: string): boolean {
  for (const part of raw.split(';').slice(1)) {
    const [key, value] = part.split('=');
    if (key?.trim().toLowerCase() !== 'samesite') continue;
    if (!value || !['lax', 'strict', 'none'].includes(value.trim().toLowerCase())) return true;
  }
  return false;
}

/**
 * RFC 6265bis §4.1.3: browsers drop a `__Secure-` cookie without Secure, and a `__Host-` cookie
 * without Secure, with a Domain, or with a Path other than `/`.
 */
export function cookiePrefixViolation(cookie: Cookie): string | null {
  const name = cookie.name;
  if (/^__secure-/i.test(name) && !cookie.secure) return '__Secure- cookie without Secure';
  if (/^__host-/i.test(name)) {
    if (!cookie.secure) return '__Host- cookie without Secure';
    if (cookie.domain !== undefined) return '__Host- cookie with a Domain attribute';
    if (cookie.path !== '/') return '__Host- cookie without Path=/';
  }
  return null;
}

function collectCookies(responses: CapturedResponse[]): {
  kept: Map<string, Cookie>;
  rejected: Record<string, string>;
} {
  const kept = new Map<string, Cookie>();
  const rejected: Record<string, string> = {};
  for (const response of responses) {
    for (const raw of getHeaders(response, 'set-cookie')) {
      const [cookie] = parseSetCookie(raw, { decodeValues: false, split: false });
      if (!cookie || !cookie.name || IGNORED.has(cookie.name)) continue;
      const violation = cookiePrefixViolation(cookie);
      if (violation) {
        rejected[cookie.name] = violation;
        continue;
      }
      kept.set(`${cookie.name}\u0000${cookie.path ?? ''}`, cookie);
    }
  }
  return { kept, rejected };
}

/**
 * Cookies set on the way to the page. `hstsPasses` says whether the HSTS test passed, which
 * softens a missing Secure flag. Session and anti-CSRF cookies are recognised by name, as the
 * Observatory does; the report adds prefix findings that browsers enforce by dropping the cookie.
 */
export function testCookies(capture: Capture, hstsPasses: boolean): TestOutcome {
  let result: Expectation | null = null;
  const auto = autoResponse(capture);
  for (const raw of getHeaders(auto, 'set-cookie')) {
    if (hasInvalidSameSite(raw)) result = worse('cookies-samesite-flag-invalid', result);
  }
  const { kept, rejected } = collectCookies([...(capture.http ?? []), ...(capture.https ?? [])]);
  const data: Record<string, unknown> = {};
  if (Object.keys(rejected).length > 0) data['prefixViolations'] = rejected;
  if (kept.size === 0) {
    return { name: 'cookies', result: 'cookies-not-found', pass: true, data };
  }
  let missingSameSite = false;
  const cookies: Record<string, unknown> = {};
  for (const cookie of kept.values()) {
    const lower = cookie.name.toLowerCase();
    const session = lower.includes('login') || lower.includes('sess');
    const antiCsrf = lower.includes('csrf');
    const sameSite = typeof cookie.sameSite === 'string' ? cookie.sameSite.toLowerCase() : undefined;
    cookies[cookie.name] = { secure: !!cookie.secure, httpOnly: !!cookie.httpOnly, sameSite: sameSite ?? null };
    // RFC 6265bis §5.7 step 18: SameSite=None needs Secure.
    if (!cookie.secure && sameSite === 'none') result = worse('cookies-samesite-flag-invalid', result);
    if (!cookie.secure)
      result = worse(
        hstsPasses ? 'cookies-without-secure-flag-but-protected-by-hsts' : 'cookies-without-secure-flag',
        result,
      );
    if (antiCsrf && !sameSite) result = worse('cookies-anticsrf-without-samesite-flag', result);
    if (session && !cookie.secure) {
      result = worse(
        hstsPasses
          ? 'cookies-session-without-secure-flag-but-protected-by-hsts'
          : 'cookies-session-without-secure-flag',
        result,
      );
    }
    if (session && !cookie.httpOnly) result = worse('cookies-session-without-httponly-flag', result);
    if (!sameSite) missingSameSite = true;
  }
  data['cookies'] = cookies;
  if (result === null) {
    result = missingSameSite
      ? 'cookies-secure-with-httponly-sessions'
      : 'cookies-secure-with-httponly-sessions-and-samesite';
  }
  const pass =
    result === 'cookies-secure-with-httponly-sessions' ||
    result === 'cookies-secure-with-httponly-sessions-and-samesite';
  return { name: 'cookies', result, pass, data };
}
