import { translatorFor } from '#lib/i18n/translate.js';
import { SCRIPT_REASONS } from '../script-reasons.js';

/** The English text of each reason a script shows, for a page without a messages block: from the catalog. */
const ENGLISH_REASONS = Object.fromEntries(
  SCRIPT_REASONS.map((reason) => [reason, translatorFor('en').reason(reason)]),
);

/**
 * Browser-side helpers shared by the page scripts, as module source text (no build step: the
 * routes in routes/assets serve these strings). `@simplewebauthn/browser` is served from its
 * package's ESM build under /assets/simplewebauthn/.
 */
export const PAGE_HELPERS_JS = String.raw`
const MESSAGES = ${JSON.stringify(ENGLISH_REASONS)};

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
  // An org policy's refusal names the authenticator and the rule in the page's language.
  const named = error && error.reason === 'authenticator_not_allowed' && error.authenticator && page.authenticatorRefusals && page.authenticatorRefusals[error.why];
  if (named) return named.replace('{name}', String(error.authenticator.name));
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
