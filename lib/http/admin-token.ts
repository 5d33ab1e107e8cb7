import { constantEquals } from '../crypto/constant-equals.js';
import type { KeyplaneError } from '../errors/keyplane-error.js';
import { fail } from '../errors/keyplane-error.js';
import { oauthError } from '../oauth/errors.js';

const BEARER = /^Bearer +(\S+)$/i;

/** Whether a refusal carries the RFC 6750 pair (`error: "invalid_token"`), as a protocol endpoint's does. */
export interface AdminTokenOptions {
  oauth?: boolean;
}

function refusal(message: string, challenge: string, options: AdminTokenOptions): KeyplaneError {
  const headers = { 'www-authenticate': challenge };
  return options.oauth
    ? oauthError('unauthorized', message, { error: 'invalid_token', headers })
    : fail('unauthorized', message, { headers });
}

/**
 * Whether the caller acts as the operator by the admin token (`Authorization: Bearer <token>`,
 * compared in constant time). Without an Authorization header it does not (false), and the caller
 * may accept a session instead. Any header that is not the configured admin token is refused with
 * 401 (RFC 6750 §3.1 `invalid_token`), so a wrong or foreign credential never falls back to the
 * session; with no admin token configured, every presented one is refused.
 */
export function presentsAdminToken(
  configured: string | undefined,
  authorization: string | undefined,
  options: AdminTokenOptions = {},
): boolean {
  if (authorization === undefined) return false;
  if (configured === undefined)
    throw refusal('the admin token is off: none is configured on this server', 'Bearer', options);
  const presented = BEARER.exec(authorization)?.[1];
  if (presented === undefined || !constantEquals(presented, configured))
    throw refusal('send the admin token as a Bearer token', 'Bearer error="invalid_token"', options);
  return true;
}

/** The admin API's guard: the admin token and nothing else; no token configured means no admin API. */
export function requireAdminToken(configured: string | undefined, authorization: string | undefined): void {
  if (configured === undefined) throw refusal('the admin API is off: no admin token is configured', 'Bearer', {});
  if (!presentsAdminToken(configured, authorization))
    throw refusal('send the admin token as a Bearer token', 'Bearer error="invalid_token"', {});
}
