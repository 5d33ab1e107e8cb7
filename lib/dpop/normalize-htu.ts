const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * The form of an `htu` that two equivalent URIs share (RFC 9449 §4.3 check 9 with RFC 3986
 * §6.2.2 and §6.2.3): scheme and host lower-cased, the default port dropped, dot segments
 * removed, an empty path made `/`, percent-encodings upper-cased and unreserved ones decoded,
 * and the query and fragment cut off. Returns null for anything that is not an absolute
 * http(s) URI.
 */
export function normalizeHtu(value: string): string | null {
  let normal = normalized.get(value);
  if (normal === undefined) {
    normal = normalizeOnce(value);
    // Full means cleared: every entry can be computed again, and a client sending a new htu
    // each time only ever costs the parse it would cost anyway.
    if (normalized.size >= NORMALIZED_LIMIT) normalized.clear();
    normalized.set(value, normal);
  }
  return normal;
}

/** A client sends the same `htu` with every proof to one endpoint; its WHATWG parse is kept. */
const NORMALIZED_LIMIT = 256;
const normalized = new Map<string, string | null>();

function normalizeOnce(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (url.username !== '' || url.password !== '') return null;
  // The WHATWG parser already lower-cases scheme and host, drops the default port, resolves
  // dot segments and turns an empty path into "/".
  const path = url.pathname.replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
  return `${url.protocol}//${url.host}${path}`;
}
