/**
 * The one form of a request path that the policy sees AND the upstream receives, so no path
 * can read one way at the edge and another way behind it (Envoy `%2F` and `..;`, oauth2-proxy
 * query-string matches, Tomcat's `;` path parameters, IIS's case folding). The rule
 * (docs/gateway.md#path-rule): a path that the most lenient common upstream (Tomcat, Jetty,
 * Spring, Express, ASP.NET/IIS, nginx) could read as another path is refused; what remains is
 * matched against routes segment by segment, ignoring ASCII case and empty segments, the way
 * those upstreams route it. Unreserved percent-encodings are decoded (RFC 3986 §6.2.2.2), so
 * `/%61pi` is `/api` for both.
 */

const UNRESERVED = /^[A-Za-z0-9\-_~]$/;

export interface RequestTarget {
  /** Normalized path, always starting with `/`. */
  path: string;
  /** The query including its `?`, or ''. */
  search: string;
}

/**
 * Refused, raw or percent-encoded: `/` and `\` hidden in escapes (`%2F`, `%5C`), encoded dots,
 * NUL and control characters, `;` (servlet path parameters: Tomcat and Jetty read `/admin;x`
 * as `/admin`), and `%25` before two hex digits (double encoding, read as a separator by an
 * upstream that decodes twice).
 */
const REFUSED_ESCAPES = /%(2f|5c|2e|3b|0[0-9a-f]|1[0-9a-f]|7f|25[0-9a-f]{2})/i;

/** Decodes the percent-escapes of a segment as UTF-8; null for overlong or otherwise invalid UTF-8 (`%C0%AF`). */
function decodeUtf8(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** Normalizes an origin-form request target (`/path?query`); null when it must be refused. */
export function normalizeRequestTarget(target: string | undefined): RequestTarget | null {
  if (!target || !target.startsWith('/') || target.length > 8192) return null;
  const queryAt = target.indexOf('?');
  const rawPath = queryAt === -1 ? target : target.slice(0, queryAt);
  const search = queryAt === -1 ? '' : target.slice(queryAt);
  if (/[\\#;]/.test(rawPath) || /[\u0000-\u0020\u007f-\uffff]/.test(rawPath)) return null;
  if (REFUSED_ESCAPES.test(rawPath)) return null;
  if (/%(?![0-9A-Fa-f]{2})/.test(rawPath)) return null;
  const path = rawPath.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
  for (const segment of path.split('/')) {
    // `.` and `..` (RFC 3986 §5.2.4); a trailing dot or space, which IIS and Windows drop (`/admin.` is `/admin`).
    if (segment === '.' || segment === '..' || /(\.|%20)$/.test(segment)) return null;
    // Printable ASCII without escapes (checked above) decodes and NFKC-normalizes to itself.
    if (!segment.includes('%')) continue;
    const decoded = decodeUtf8(segment);
    // Invalid UTF-8 (overlong `%C0%AF` for `/`), or compatibility forms (fullwidth `／`, `Ａ`)
    // that a Unicode-normalising upstream folds into ASCII.
    if (decoded === null || decoded.normalize('NFKC') !== decoded) return null;
  }
  return { path, search };
}

/** Splits a path into its non-empty segments, so `/api` never matches `/apix` and `//a` reads as `/a` (as Tomcat, Spring and nginx merge slashes). */
export function pathSegments(path: string): string[] {
  const end = path.search(/[?#]/);
  return (end === -1 ? path : path.slice(0, end)).split('/').filter((segment) => segment.length > 0);
}

/** The form in which segments are compared: ASCII case folded, as Express, ASP.NET and IIS route. */
function segmentKey(segment: string): string {
  return segment.replace(/[A-Z]/g, (char) => char.toLowerCase());
}

/**
 * The route (policy or upstream) whose path is the longest segment-wise prefix of `path`,
 * ignoring ASCII case (`/Admin` is under `/admin`), or null when none matches. `path` should be
 * one that `normalizeRequestTarget` accepted.
 */
export function findRoute<T extends { path: string }>(routes: readonly T[], path: string): T | null {
  const segments = pathSegments(path).map(segmentKey);
  let best: T | null = null;
  let bestLength = -1;
  const prefixes = routePrefixes(routes);
  for (let i = 0; i < routes.length; i++) {
    const prefix = prefixes[i]!;
    if (prefix.length > segments.length || prefix.length <= bestLength) continue;
    if (prefix.every((segment, index) => segments[index] === segment)) {
      best = routes[i]!;
      bestLength = prefix.length;
    }
  }
  return best;
}

/**
 * The segment keys of each route's path, computed once per route list: the lists (the held
 * policy, the upstreams) live until replaced, and every request is matched against them.
 */
const prefixesOf = new WeakMap<readonly { path: string }[], { paths: string[]; prefixes: string[][] }>();

function routePrefixes(routes: readonly { path: string }[]): string[][] {
  const known = prefixesOf.get(routes);
  // A list changed in place (its paths differ) is read again.
  if (known && known.paths.length === routes.length && known.paths.every((path, index) => routes[index]!.path === path))
    return known.prefixes;
  const compiled = {
    paths: routes.map((route) => route.path),
    prefixes: routes.map((route) => pathSegments(route.path).map(segmentKey)),
  };
  prefixesOf.set(routes, compiled);
  return compiled.prefixes;
}
