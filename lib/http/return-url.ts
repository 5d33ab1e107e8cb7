/**
 * Where the gateway may send a browser back to after sign-in or sign-out. Only a path on the
 * gateway's own origin: open redirects through `rd=` and friends are the most repeated
 * forward-auth advisory (oauth2-proxy `/\`, encoded whitespace; Authelia logout; TFA state).
 */

// Control characters (C0, DEL, C1) and whitespace a browser would strip or fold.
const UNSAFE = /[\u0000-\u0020\u007f-\u009f\u00a0\u1680\u2000-\u200f\u2028\u2029\u202f\u205f\u3000\ufeff]/;

/**
 * Returns the safe path (path, query and fragment, starting with a single `/`) for `target`
 * relative to the gateway's public `origin`, or null when `target` could leave that origin.
 * Absolute URLs are accepted only when their origin equals `origin`.
 */
export function validateReturnUrl(target: unknown, origin: string): string | null {
  if (typeof target !== 'string' || target.length === 0 || target.length > 2048) return null;
  if (UNSAFE.test(target) || target.includes('\\')) return null;
  // Percent-encoded backslashes and control characters are decoded by some browsers and servers.
  if (/%(5c|0[0-9a-f]|1[0-9a-f]|7f|09|0a|0d)/i.test(target)) return null;
  let base: URL;
  try {
    base = new URL(origin);
  } catch {
    return null;
  }
  if (target.startsWith('/')) {
    // `//evil` and `/\evil` are scheme-relative to a browser.
    if (target.startsWith('//')) return null;
  } else if (!/^https?:\/\//i.test(target)) {
    return null;
  }
  let resolved: URL;
  try {
    resolved = new URL(target, base);
  } catch {
    return null;
  }
  if (resolved.origin !== base.origin) return null;
  if (resolved.username || resolved.password) return null;
  const path = `${resolved.pathname}${resolved.search}${resolved.hash}`;
  if (!path.startsWith('/') || path.startsWith('//')) return null;
  return path;
}
