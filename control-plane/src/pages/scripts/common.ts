/**
 * Browser-side helpers shared by the page scripts, as module source text (no build step: the
 * routes in routes/assets serve these strings). `@simplewebauthn/browser` is served from its
 * package's ESM build under /assets/simplewebauthn/.
 */
export const COMMON_JS = String.raw`
const MESSAGES = {
  invalid_username: 'Usernames are 3 to 32 letters, digits, dots, dashes or underscores, starting with a letter or digit.',
  username_taken: 'That username is taken. Try another one.',
  signup_closed: 'Sign-up is closed on this server. Ask its operator for an invitation.',
  invalid_setup_token: 'This setup link is unknown, expired or was used already. Restart the server for a new one.',
  challenge_unknown: 'That attempt expired. Please try again.',
  challenge_mismatch: 'That attempt does not match this page. Please try again.',
  unknown_credential: 'This passkey is not registered for that account.',
  credential_exists: 'This passkey is registered already.',
  credential_counter_regressed: 'This passkey reported an old counter; it may have been copied. Use another passkey.',
  user_verification_required: 'Your device did not verify you (PIN or biometric). Please try again.',
  webauthn_origin_mismatch: 'This passkey was used on another site.',
  webauthn_rp_mismatch: 'This passkey belongs to another site.',
  webauthn_malformed: 'Your browser sent an unreadable passkey response.',
  webauthn_verification_failed: 'The passkey could not be verified.',
  last_passkey: 'This is your last passkey. Add another one before removing it.',
  label_invalid: 'Labels are 1 to 64 characters.',
  display_name_invalid: 'Display names are up to 64 characters.',
  invalid_preferences: 'One of the preferences has a value this server does not know.',
  insufficient_assurance: 'Please confirm it is you first (step up).',
  confirmation_mismatch: 'Type your username exactly to confirm.',
  account_disabled: 'This account is disabled. Ask the operator of this server.',
  rate_limited: 'Too many attempts. Wait a minute and try again.',
  locked_out: 'Too many wrong codes. Try again later.',
  totp_required: 'Enter the 6-digit code from your authenticator app.',
  totp_invalid: 'That code is not right. Check the time on your phone and try the current code.',
  totp_replayed: 'That code was used already. Wait for the next one.',
  totp_already_active: 'TOTP is on already.',
  totp_not_pending: 'Start the setup again.',
  totp_not_active: 'TOTP is off already.',
  invalid_email: 'That does not look like an e-mail address.',
  unauthorized: 'Your session ended. Please sign in again.',
  origin_mismatch: 'This request came from another site and was refused.',
  enrollment_unknown: 'No enrollment waits with this id and code: check the code the agent printed, or start again (codes last 15 minutes).',
  agent_state: 'The agent is not in a state that allows this.',
};

/**
 * The page's own messages, translated by the server (docs/i18n.md "Refusals shown on pages"): a
 * JSON block the page renders, keyed by reason. A page without one (English) keeps MESSAGES.
 */
function pageMessages() {
  const block = document.getElementById('kp-messages');
  if (!block) return null;
  try { return JSON.parse(block.textContent || '{}'); } catch { return null; }
}
export const PAGE_MESSAGES = pageMessages();
const ENGLISH = !PAGE_MESSAGES || PAGE_MESSAGES.locale === 'en';

export function describe(error) {
  const page = PAGE_MESSAGES || {};
  if (error && error.name === 'NotAllowedError') return page.cancelled || 'The passkey prompt was cancelled or timed out.';
  if (error && error.name === 'InvalidStateError') return page.passkeyExists || 'This device already holds a passkey for this account.';
  if (error && typeof error.reason === 'string') {
    const translated = page.reasons && page.reasons[error.reason];
    if (translated) return translated;
    if (ENGLISH) return MESSAGES[error.reason] || error.message || 'Something went wrong (' + error.reason + ').';
    // Not written in this language: the generic line.
    return page.failed;
  }
  return page.failed || 'Something went wrong. Please try again.';
}

export function say(status, text, isError = false) {
  status.textContent = text;
  status.classList.toggle('error', isError);
}

/**
 * A form error (docs/accessibility.md#form-errors): said in the page's live region, the field
 * marked invalid and described by that region, and focused; typing in it again clears the mark.
 */
export function sayInvalid(status, field, text) {
  say(status, text, true);
  if (!field) return;
  field.setAttribute('aria-invalid', 'true');
  const ids = (field.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
  if (status.id && !ids.includes(status.id)) field.setAttribute('aria-describedby', [status.id, ...ids].join(' '));
  field.focus();
  field.addEventListener('input', () => clearInvalid(status, field), { once: true });
}

export function clearInvalid(status, field) {
  field.removeAttribute('aria-invalid');
  const ids = (field.getAttribute('aria-describedby') || '').split(' ').filter((id) => id && id !== status.id);
  if (ids.length) field.setAttribute('aria-describedby', ids.join(' '));
  else field.removeAttribute('aria-describedby');
}

/** Runs an action of a page: on success says so in the page's status line and reloads; else says why not. */
export async function act(work, done, status = document.getElementById('status')) {
  try {
    await work();
    say(status, done);
    setTimeout(() => location.reload(), 400);
  } catch (error) {
    say(status, describe(error), true);
  }
}

export async function call(method, url, body) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(url, init);
  let json;
  try { json = await res.json(); } catch { json = { ok: false, reason: 'internal' }; }
  if (!json.ok) throw json;
  return json;
}
`;
