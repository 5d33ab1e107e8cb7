import { fail, type KeyplaneError } from '../errors/keyplane-error.js';
import type { Reason } from '../errors/reasons.js';

/**
 * RFC 6749 §5.2 and the extension registries name these `error` codes. OAuth endpoints answer
 * with the envelope plus `error`/`error_description` (docs/errors.md#oauth-endpoints).
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'slow_down'
  // RFC 8628 §3.5: the device grant's poll answers
  | 'authorization_pending'
  | 'expired_token'
  | 'invalid_target'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'login_required'
  | 'consent_required'
  | 'interaction_required'
  | 'insufficient_user_authentication'
  // OIDC Core §3.1.2.6: request objects, request_uri and the registration parameter
  | 'invalid_request_object'
  | 'invalid_request_uri'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'registration_not_supported';

/** The RFC 6749 error fields: `{error, error_description}` (the description omitted when empty). */
export function oauthFields(
  error: OAuthErrorCode,
  description?: string,
): { error: OAuthErrorCode; error_description?: string } {
  return description ? { error, error_description: description } : { error };
}

/** `error` codes for reasons raised before an OAuth handler decides (a malformed body, a rate limit). */
const BY_REASON: Partial<Record<Reason, OAuthErrorCode>> = {
  invalid_request: 'invalid_request',
  // RFC 8628 §3.5: the client should slow down its requests.
  rate_limited: 'slow_down',
  // PostgreSQL or Redis is away: 503 with Retry-After. RFC 6749 §5.2 lists no 5xx code for the
  // token endpoint; this one (§4.1.2.1, registered in §11.4) tells a client that retrying helps.
  unavailable: 'temporarily_unavailable',
  unsupported_media_type: 'invalid_request',
  payload_too_large: 'invalid_request',
};

/** The RFC 6749 §5.2 `error` for a failure that did not set one: `server_error` for 5xx, else `invalid_request`. */
export function oauthErrorFor(reason: Reason, status: number): OAuthErrorCode {
  return BY_REASON[reason] ?? (status >= 500 ? 'server_error' : 'invalid_request');
}

/**
 * A KeyplaneError whose envelope also carries the RFC 6749 pair. `error` defaults to the
 * reason itself, which is right whenever the reason is an RFC code (`invalid_target`, …).
 */
export function oauthError(
  reason: Reason,
  message: string,
  options: { error?: OAuthErrorCode; headers?: Record<string, string>; status?: number } = {},
): KeyplaneError {
  const error = options.error ?? (reason as OAuthErrorCode);
  return fail(reason, message, {
    fields: oauthFields(error, message),
    ...(options.headers ? { headers: options.headers } : {}),
    ...(options.status ? { status: options.status } : {}),
  });
}

/**
 * The query parameters of an authorization error redirect (RFC 6749 §4.1.2.1 with the RFC 9207
 * `iss`). Only ever send them to a redirect URI that matched the registration exactly.
 */
export function authorizationErrorParams(input: {
  error: OAuthErrorCode;
  description?: string;
  state?: string;
  iss: string;
}): Record<string, string> {
  return {
    error: input.error,
    ...(input.description ? { error_description: input.description } : {}),
    ...(input.state !== undefined ? { state: input.state } : {}),
    iss: input.iss,
  };
}
