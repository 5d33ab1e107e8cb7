/**
 * Redirect URIs are an exact-match allowlist (RFC 9700 §2.1): no prefix,
 * pattern, case-folding or port relaxation, so a near miss (trailing slash, case, extra query,
 * other host or port, fragment, userinfo) never matches.
 */

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const LOOPBACK_IPS = new Set(['127.0.0.1', '[::1]']);
const MAX_LENGTH = 2000;

/**
 * True only when `candidate` is, character for character, one of the registered URIs. With
 * `loopbackAnyPort` (native clients), RFC 8252 §7.3: a registered `http://127.0.0.1…` or
 * `http://[::1]…` URI matches the same URI on any port; everything else still matches exactly.
 */
export function matchRedirectUri(
  registered: readonly string[],
  candidate: unknown,
  options: { loopbackAnyPort?: boolean } = {},
): candidate is string {
  if (typeof candidate !== 'string') return false;
  if (registered.some((uri) => uri === candidate)) return true;
  return options.loopbackAnyPort === true && registered.some((uri) => sameLoopbackButPort(uri, candidate));
}

/** RFC 8252 §7.3 and §8.3: loopback IP literals only (not `localhost`), http, equal but for the port. */
function sameLoopbackButPort(registered: string, candidate: string): boolean {
  let want: URL;
  let got: URL;
  try {
    want = new URL(registered);
    got = new URL(candidate);
  } catch {
    return false;
  }
  if (want.protocol !== 'http:' || !LOOPBACK_IPS.has(want.hostname)) return false;
  // The candidate must be in the parser's own spelling, so nothing the parser would rewrite slips through.
  if (got.href !== candidate || candidate.includes('#') || got.username !== '' || got.password !== '') return false;
  got.port = want.port;
  return got.href === want.href;
}

export type RedirectUriProblem =
  'not_a_string' | 'too_long' | 'not_absolute' | 'scheme' | 'fragment' | 'wildcard' | 'userinfo' | 'whitespace';

const PROBLEMS: Record<RedirectUriProblem, string> = {
  not_a_string: 'must be a string',
  too_long: `must be at most ${MAX_LENGTH} characters`,
  not_absolute: 'must be an absolute URL',
  scheme: 'must use https (http only on localhost, 127.0.0.1 or [::1])',
  fragment: 'must not contain a fragment',
  wildcard: 'must not contain a wildcard',
  userinfo: 'must not contain user information',
  whitespace: 'must not contain whitespace or control characters',
};

/**
 * Checks a redirect URI offered at registration (RFC 7591 §2, RFC 6749 §3.1.2, RFC 8252 §7.3):
 * https, or http only on a loopback host; no fragment (RFC 6749 §3.1.2); no wildcard; no
 * userinfo. Returns null when acceptable, else a short description of the problem.
 */
export function validateRedirectUriForRegistration(
  uri: unknown,
  options: { native?: boolean } = {},
): { problem: RedirectUriProblem; message: string } | null {
  const problem = options.native && isPrivateUseScheme(uri) ? null : findProblem(uri);
  return problem ? { problem, message: PROBLEMS[problem] } : null;
}

function findProblem(uri: unknown): RedirectUriProblem | null {
  if (typeof uri !== 'string') return 'not_a_string';
  if (uri.length > MAX_LENGTH) return 'too_long';
  if (/[\s\u0000-\u001f\u007f]/.test(uri)) return 'whitespace';
  if (uri.includes('#')) return 'fragment';
  if (uri.includes('*')) return 'wildcard';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'not_absolute';
  }
  // The WHATWG parser accepts "https:example.com"; insist on the authority form.
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(uri) || url.host === '') return 'not_absolute';
  if (url.username !== '' || url.password !== '' || /^[^:]+:\/\/[^/?]*@/.test(uri)) return 'userinfo';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return 'scheme';
}

/**
 * RFC 8252 §7.1: a native app's private-use URI scheme, a reverse domain name of at least two
 * labels (`com.example.app:/callback`), without an authority, fragment or whitespace.
 */
function isPrivateUseScheme(uri: unknown): boolean {
  if (typeof uri !== 'string' || uri.length > MAX_LENGTH || /[\s\u0000-\u001f\u007f#*]/.test(uri)) return false;
  const match = /^([a-z][a-z0-9+-]*(?:\.[a-z0-9+-]+)+):(\/?[^/].*)?$/i.exec(uri);
  if (!match) return false;
  try {
    new URL(uri);
  } catch {
    return false;
  }
  return true;
}

/** The origin of each redirect URI (used for web_message, FedCM and WebAuthn related origins). */
export function originsOf(uris: readonly string[]): string[] {
  const origins = new Set<string>();
  for (const uri of uris) {
    try {
      // A native app's private-use scheme has the opaque origin "null", which must never be allowed.
      const { origin } = new URL(uri);
      if (origin !== 'null') origins.add(origin);
    } catch {
      // Registered URIs were validated; an unparsable one contributes nothing.
    }
  }
  return [...origins];
}
