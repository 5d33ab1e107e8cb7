import { randomUUID } from 'node:crypto';

/**
 * What both services' access logs share: the query parameters whose values are credentials
 * (never written to a log line), and the request id (one per request, taken from a proxy in
 * front only when that proxy is trusted).
 */

const SECRET_PARAMS =
  /([?&](?:code|token|code_verifier|refresh_token|id_token_hint|client_secret|state|nonce|signupToken)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  // Most URLs carry no parameter at all: two scans are cheaper than the regular expression's replace.
  if (!url.includes('?') && !url.includes('&')) return url;
  return url.replace(SECRET_PARAMS, '$1[redacted]');
}

/** A request id a proxy may hand on: short, and only characters that are safe in a log line and a header. */
const FORWARDABLE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * The id of one request: the `X-Request-Id` a trusted proxy sent (so one id follows the request
 * from the load balancer to the app), or a new UUID; a client's own value is never believed,
 * since it could forge or flood what operators search their logs for.
 */
export function requestIdFor(header: string | string[] | undefined, fromTrustedProxy: boolean): string {
  if (fromTrustedProxy && typeof header === 'string' && FORWARDABLE_ID.test(header)) return header;
  return randomUUID();
}
