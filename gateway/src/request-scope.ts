import type { IncomingMessage } from 'node:http';
import { parseCookieHeader } from '#lib/gateway-protocol/session-cookie.js';

/**
 * What one request carries that several of the gateway's concerns read (session, sign-in,
 * sign-out, language): made when first asked for and kept for the rest of the request, so the
 * Cookie header is parsed once however many of them look.
 */
export interface RequestScope {
  /** The Cookie header as sent: the key the opened-session cache remembers it by. */
  readonly cookieHeader: string | undefined;
  /** name → value, the first occurrence of a name winning (browsers send the most specific first). */
  readonly cookies: Readonly<Record<string, string>>;
}

const scopes = new WeakMap<IncomingMessage, RequestScope>();

export function requestScope(req: IncomingMessage): RequestScope {
  let scope = scopes.get(req);
  if (!scope) {
    const cookieHeader = req.headers['cookie'];
    scope = { cookieHeader, cookies: Object.freeze(parseCookieHeader(cookieHeader)) };
    scopes.set(req, scope);
  }
  return scope;
}
