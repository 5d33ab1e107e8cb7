import type { Reason } from '#lib/errors/reasons.js';

/**
 * The refusals the pages' scripts can show (docs/i18n.md "Refusals shown on pages"): what the
 * endpoints they call answer, and every reason a script names. Each page with scripts carries their
 * `reason.<reason>` messages in its language; `test/lib/i18n/catalogs.test.ts` fails when a script
 * names a reason missing here.
 */
export const SCRIPT_REASONS = [
  // Any endpoint
  'rate_limited',
  'invalid_request',
  'origin_mismatch',
  'not_found',
  'forbidden',
  'unauthorized',
  'conflict',
  'payload_too_large',
  'unavailable',
  'internal',
  'step_up_required',
  'insufficient_assurance',
  'account_disabled',
  'sso_required',
  'account_suspended',
  // Sign-up and sign-in with a passkey
  'invalid_username',
  'username_taken',
  'signup_closed',
  'invalid_setup_token',
  'challenge_unknown',
  'challenge_mismatch',
  'unknown_credential',
  'credential_exists',
  'credential_counter_regressed',
  'user_verification_required',
  'webauthn_origin_mismatch',
  'webauthn_rp_mismatch',
  'webauthn_malformed',
  'webauthn_verification_failed',
  'authenticator_not_allowed',
  // A provisioned account's enrolment link (its page's script)
  'link_invalid',
  'link_used',
  'link_expired',
  // Second factors and backup codes
  'totp_required',
  'totp_invalid',
  'totp_replayed',
  'totp_already_active',
  'totp_not_pending',
  'totp_not_active',
  'invalid_recovery_code',
  'locked_out',
  // The account page
  'last_passkey',
  'unknown_passkey',
  'unknown_session',
  'unknown_device',
  'label_invalid',
  'display_name_invalid',
  'invalid_preferences',
  'confirmation_mismatch',
  'invalid_email',
  'too_many_emails',
  'email_taken',
  // Agents, organizations, apps and the contact form
  'enrollment_unknown',
  'enrollment_not_approved',
  'agent_state',
  'last_owner',
  'already_member',
  'invalid_redirect_uri',
  'invalid_client_metadata',
  'message_too_long',
] as const satisfies readonly Reason[];
