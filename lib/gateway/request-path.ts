/**
 * The one form of a request target that the policy sees AND the upstream receives, so no
 * path can read one way at the edge and another way behind it (Envoy `%2F` and `..;`,
 * oauth2-proxy query-string matches). Encoded slashes, backslashes and dots, and dot
 * segments of any kind are refused; unreserved percent-encodings are decoded (RFC 3986
 * §6.2.2.2) so `/%61pi` is `/api` for both.
 */

const UNRESERVED = /^[A-Za-z0-9\-_~]$/;

export interface RequestTarget {
  /** Normalized path, always starting with `/`. */
  path: string;
  /** The query including its `?`, or ''. */
  search: string;
}

/** Normalizes an origin-form request target (`/path?query`); null when it must be refused. */
export function normalizeRequestTarget(target: string | undefined): RequestTarget | null {
  if (!target || !target.startsWith('/') || target.length > 8192) return null;
  const queryAt = target.indexOf('?');
  const rawPath = queryAt === -1 ? target : target.slice(0, queryAt);
  const search = queryAt === -1 ? '' : target.slice(queryAt);
  if (rawPath.includes('\\') || rawPath.includes('#') || /[\u0000-\u0020\u007f-\uffff]/.test(rawPath)) return null;
  if (/%(2f|5c|2e|00)/i.test(rawPath)) return null;
  if (/%(?![0-9A-Fa-f]{2})/.test(rawPath)) return null;
  const path = rawPath.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
  // `.`, `..` and their `;param` forms (`..;/`, read as `..` by Java servlet containers).
  if (path.split('/').some((segment) => /^\.\.?(;.*)?$/.test(segment))) return null;
  return { path, search };
}
