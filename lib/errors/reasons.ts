/**
 * Every `reason` an envelope can carry, with its HTTP status and meaning. docs/errors.md is
 * generated from this table (`npm run docs`) and a test keeps the two in step.
 * Add a reason here before throwing it anywhere.
 */
export const REASONS = {
  // generic HTTP
  invalid_request: { status: 400, description: 'The request is malformed: bad JSON, a schema violation, a missing or invalid field.' },
  unauthorized: { status: 401, description: 'No valid credential (session, token or admin token) came with the request.' },
  forbidden: { status: 403, description: 'The caller is known but may not do this.' },
  not_found: { status: 404, description: 'No such resource, or one the caller may not know exists.' },
  method_not_allowed: { status: 405, description: 'The path exists but not with this method.' },
  conflict: { status: 409, description: 'The request conflicts with the current state.' },
  payload_too_large: { status: 413, description: 'The body is larger than `http.bodyLimit`.' },
  unsupported_media_type: { status: 415, description: 'The body is neither JSON nor, where documented, form data.' },
  rate_limited: { status: 429, description: 'Too many requests from this address or for this account; `Retry-After` says when to try again.' },
  internal: { status: 500, description: 'The server failed; the request id in `x-request-id` identifies it in the logs.' },
  not_ready: { status: 503, description: 'Storage, keys or shared state are not ready yet.' },
  // credentials and lockout
  locked_out: { status: 429, description: 'Too many wrong codes for this account and method; locked until `Retry-After`.' },
  origin_mismatch: { status: 403, description: 'A state-changing request came from an origin other than the issuer (or a registered one).' },
  // OAuth 2.0 / OIDC (issue 5): the reason equals the RFC `error` code where one exists
  invalid_scope: { status: 400, description: 'A requested scope is malformed, unknown or not registered for the client (RFC 6749 §5.2).' },
  invalid_target: { status: 400, description: 'The `resource` is not one of the exact resource URIs registered for the client (RFC 8707 §2).' },
  invalid_redirect_uri: { status: 400, description: 'A redirect URI is not https (or http on a loopback host), has a fragment or a wildcard, or is not a registered exact match (RFC 7591 §3.2.2).' },
  invalid_client_metadata: { status: 400, description: 'A client metadata field is invalid or inconsistent with the others (RFC 7591 §3.2.2).' },
  stale_revision: { status: 409, description: 'The client registration changed since the `revision` this update was based on; read it again and retry.' },
  invalid_dpop_proof: { status: 400, description: 'The DPoP proof is missing, malformed, replayed or does not match the request (RFC 9449 §4.3).' },
  use_dpop_nonce: { status: 400, description: 'The DPoP proof must carry the server nonce sent in the `DPoP-Nonce` header (RFC 9449 §8).' },
  invalid_client: { status: 401, description: 'Client authentication failed: unknown client, wrong secret or assertion, or a method other than the registered `token_endpoint_auth_method` (RFC 6749 §5.2).' },
  invalid_grant: { status: 400, description: 'The authorization code or refresh token is unknown, expired, used already, revoked, or was issued to another client, redirect URI or PKCE verifier (RFC 6749 §5.2).' },
  unauthorized_client: { status: 400, description: 'The client is not registered for this grant type or operation (RFC 6749 §5.2).' },
  unsupported_grant_type: { status: 400, description: 'The token endpoint offers `authorization_code` and `refresh_token` only (RFC 6749 §5.2).' },
  unsupported_response_type: { status: 400, description: 'Only `response_type=code` is offered: implicit and hybrid flows are refused (RFC 6749 §4.1.2.1).' },
  unknown_client: { status: 400, description: 'The authorization request names no registered client, or a redirect URI that is not registered for it exactly; shown on a page, never redirected.' },
  login_required: { status: 401, description: '`prompt=none` was asked but there is no usable session (OIDC Core §3.1.2.6).' },
  interaction_required: { status: 401, description: '`prompt=none` was asked but the session does not meet `acr_values` or `max_age` without user interaction (OIDC Core §3.1.2.6).' },
  access_denied: { status: 403, description: 'The user declined the request, or the one-tap approval is unknown, expired or belongs to another session.' },
  // passkey accounts (issue 3)
  invalid_username: { status: 400, description: 'The username does not match `^[a-z0-9][a-z0-9._-]{2,31}$` after case-folding.' },
  username_taken: { status: 409, description: 'That username (or a previous username kept as an alias) belongs to an account already.' },
  display_name_invalid: { status: 400, description: 'The display name is longer than 64 characters or contains control characters.' },
  label_invalid: { status: 400, description: 'The passkey label is empty, longer than 64 characters or contains control characters.' },
  invalid_preferences: { status: 400, description: 'A preference key is unknown or its value is not one the key accepts.' },
  signup_closed: { status: 403, description: 'Self-service sign-up is turned off (`signup.selfService: false`); only the founder setup link creates an account.' },
  invalid_setup_token: { status: 403, description: 'The founder setup token is unknown, already used, or a founder exists already.' },
  challenge_unknown: { status: 400, description: 'The WebAuthn challenge or sign-up token is unknown, expired or already used (every ceremony is one-use).' },
  challenge_mismatch: { status: 400, description: 'The response answers a different ceremony than the one it was sent to (purpose, account or user differs).' },
  webauthn_malformed: { status: 400, description: 'The WebAuthn response is not a well-formed credential (bad base64url, JSON, CBOR or type).' },
  webauthn_origin_mismatch: { status: 400, description: 'The WebAuthn response was produced on an origin this server does not expect.' },
  webauthn_rp_mismatch: { status: 400, description: 'The WebAuthn response was produced for another relying party ID.' },
  user_verification_required: { status: 400, description: 'The authenticator did not report user presence and user verification (PIN or biometric).' },
  webauthn_verification_failed: { status: 400, description: 'The WebAuthn response failed verification (signature, algorithm or attestation).' },
  unknown_credential: { status: 401, description: 'No passkey with this credential id is registered (for this account).' },
  credential_counter_regressed: { status: 401, description: 'The passkey\'s signature counter went backwards: the authenticator may have been cloned.' },
  credential_exists: { status: 409, description: 'This passkey is registered already.' },
  last_passkey: { status: 409, description: 'The last passkey of an account cannot be removed; add another first.' },
  unknown_passkey: { status: 404, description: 'The account has no passkey with this credential id.' },
  unknown_session: { status: 404, description: 'The account has no live session with this identifier.' },
  unknown_device: { status: 404, description: 'The account has no device with this id in its ledger.' },
  insufficient_assurance: { status: 403, description: 'The session\'s assurance is too low for this action; step up at `/auth/step-up` first.' },
  // TOTP, recovery codes, email addresses and magic links (issue 3)
  totp_required: { status: 401, description: 'TOTP is active on the account: this step needs its current 6-digit code.' },
  totp_invalid: { status: 401, description: 'The TOTP code is wrong (or outside the one-step window); wrong codes count toward lockout.' },
  totp_replayed: { status: 401, description: 'A code of this time step was accepted already; wait for the next code.' },
  totp_already_active: { status: 409, description: 'TOTP is active already; disable it before setting up a new secret.' },
  totp_not_pending: { status: 409, description: 'There is no pending TOTP setup to confirm; call /auth/totp/setup first.' },
  totp_not_active: { status: 409, description: 'TOTP is not active on this account.' },
  invalid_recovery_code: { status: 401, description: 'The account or recovery code is wrong, or the code was used already; failures count toward lockout.' },
  invalid_email: { status: 400, description: 'The email address is not a plausible address (one @, no spaces, at most 254 characters).' },
  too_many_emails: { status: 409, description: 'The account holds the most e-mail addresses it may (10).' },
  email_taken: { status: 409, description: 'Another account verified this address first; a verified address belongs to one account.' },
  link_invalid: { status: 400, description: 'The link token is unknown or malformed (copy the whole link from the mail).' },
  link_used: { status: 410, description: 'The link was used already; every link works once.' },
  link_expired: { status: 410, description: 'The link is older than its lifetime; ask for a new one.' },
  link_wrong_device: { status: 403, description: 'A sign-in link works only in the browser that asked for it; open it there or ask for a new one here.' },
  invalid_return: { status: 400, description: 'The `return` target is neither a path on this server nor a registered relying-party URI.' },
  // receipt ledger (issue 4)
  unknown_receipt: { status: 404, description: 'No receipt has this hash (receipts are looked up by their exact lower-case hex SHA-256 only).' },
  unknown_epoch: { status: 404, description: 'No ledger epoch with this number has been sealed yet.' },
  receipt_in_epoch: { status: 409, description: 'The receipt is in this epoch, so it has no proof of absence; `GET /receipts/{hash}` gives its inclusion proof.' },
  // edge-gate (issue 6)
  gateway_not_configured: { status: 503, description: 'The gateway holds no valid signed config from the control plane yet, so it refuses every protected request (fail closed).' },
  upstream_unavailable: { status: 502, description: 'The gateway could not reach the upstream app or the connection failed mid-request.' },
  upstream_busy: { status: 503, description: 'The gateway is closing or its connection pool to the upstream is full; retry shortly.' },
  upstream_timeout: { status: 504, description: 'The upstream app did not answer within the gateway\'s timeout.' },
  invalid_path: { status: 400, description: 'The request path carries encoded slashes, backslashes or dot segments that could read differently upstream.' },
  invalid_token: { status: 401, description: 'The access token is malformed, expired, revoked, for another audience or not signed by the control plane (RFC 6750 §3.1).' },
  insufficient_scope: { status: 403, description: 'The access token lacks a scope this route requires (RFC 6750 §3.1).' },
  insufficient_user_authentication: { status: 401, description: 'The authentication is weaker than this route requires; ask again with the `acr_values` in `WWW-Authenticate` (RFC 9470).' },
  principal_not_allowed: { status: 403, description: 'This route admits only other principal types (human or agent).' },
  dpop_required: { status: 401, description: 'This route needs a DPoP-bound access token with a DPoP proof (RFC 9449).' },
} as const satisfies Record<string, { status: number; description: string }>;

export type Reason = keyof typeof REASONS;

export function statusOf(reason: Reason): number {
  return REASONS[reason].status;
}
