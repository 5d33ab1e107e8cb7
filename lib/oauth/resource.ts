import { oauthError } from './errors.js';

/**
 * RFC 8707 §2: the `resource` parameter must exactly match one of the resource URIs registered
 * for the client (RFC 8707 §2, docs/oidc.md). Returns the resource (the access token's `aud`), or
 * undefined when none was requested. Keyplane accepts one resource per request: several are
 * refused with `invalid_target` rather than minting a multi-audience token.
 */
export function checkResource(registered: readonly string[], requested: unknown): string | undefined {
  if (requested === undefined || requested === null) return undefined;
  const values = Array.isArray(requested) ? requested : [requested];
  if (values.length === 0) return undefined;
  if (values.length > 1) throw oauthError('invalid_target', 'request one resource at a time');
  const [value] = values;
  if (typeof value !== 'string' || !registered.includes(value)) {
    throw oauthError('invalid_target', 'the resource is not registered for this client');
  }
  return value;
}

/**
 * Checks a resource URI offered at registration (RFC 8707 §2): an absolute https URI (http
 * only on a loopback host) without a fragment. Returns a problem description or null.
 */
export function validateResourceForRegistration(uri: unknown): string | null {
  if (typeof uri !== 'string' || uri.length === 0 || uri.length > 2000)
    return 'must be a non-empty string of at most 2000 characters';
  if (uri.includes('#')) return 'must not contain a fragment';
  if (/\s/.test(uri)) return 'must not contain whitespace';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'must be an absolute URI';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) return null;
  return 'must use https (http only on a loopback host)';
}
