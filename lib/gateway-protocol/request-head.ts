import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';

/**
 * Header fields that must appear at most once in a request the gateway lets through. Node keeps
 * the first of duplicate `Host` and `Authorization` fields; a proxy in front or the app behind
 * may read the last one, so the gateway would judge one request and the other side act on
 * another. RFC 9112 §3.2: a server MUST answer 400 to a request with more than one `Host`;
 * RFC 9449 §4.3: exactly one `DPoP` field; RFC 9110 §11.6.2: `Authorization` is not a list.
 */
const SINGLETON_FIELDS = new Set(['host', 'authorization', 'dpop']);

/** 400 `invalid_request` when a singleton field comes more than once (node's `rawHeaders`); null otherwise. */
export function checkSingletonFields(rawHeaders: readonly string[]): KeyplaneError | null {
  const seen = new Set<string>();
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!SINGLETON_FIELDS.has(name)) continue;
    if (seen.has(name)) return fail('invalid_request', `the request has more than one ${name} header`);
    seen.add(name);
  }
  return null;
}
