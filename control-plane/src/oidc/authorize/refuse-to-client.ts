import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { REASONS, type Reason } from '#lib/errors/reasons.js';
import { oauthFields, type OAuthErrorCode } from '#lib/oauth/errors.js';

/**
 * A refusal the client hears at its redirect URI (RFC 6749 §4.1.2.1, OIDC Core §3.1.2.6), thrown
 * by a step once that URI is verified; the operation answers it there (authorize.ts). Its reason
 * is the OAuth code where that is one of ours, else `invalid_request`.
 */
export function refuseToClient(error: OAuthErrorCode, description: string): KeyplaneError {
  const reason: Reason = Object.hasOwn(REASONS, error) ? (error as Reason) : 'invalid_request';
  return fail(reason, description, { fields: oauthFields(error, description), toClient: true });
}
