/** The /auth page: passkey sign-up and sign-in (username or usernameless). */
export const AUTH_JS = String.raw`
import { startAuthentication, startRegistration, browserSupportsWebAuthn, browserSupportsWebAuthnAutofill } from '/assets/simplewebauthn/index.js';
import { call, describe, say, sayInvalid } from '/assets/common.js';

const form = document.getElementById('auth-form');
const input = document.getElementById('username');
const status = document.getElementById('status');
const params = new URLSearchParams(location.search);
const setupToken = params.get('setup');
// Where to go after sign-in (e.g. a pending authorize request): the server puts only a path on
// this origin in data-return (lib/http/return-url.ts); resolving it again here is a second fence.
const back = form.dataset.return;
function destination(home) {
  if (!back) return home;
  const url = new URL(back, location.origin);
  return url.origin === location.origin ? url.pathname + url.search + url.hash : home;
}
// The status lines come in the page's language, from data-msg-* attributes on the form.
let busy = false;

if (!browserSupportsWebAuthn()) say(status, form.dataset.msgUnsupported, true);

async function signUp() {
  const username = input.value.trim();
  if (!username) {
    sayInvalid(status, input, form.dataset.msgChooseUsername);
    return;
  }
  say(status, form.dataset.msgCreating);
  const begin = await call('POST', '/auth/registration-options', setupToken ? { username, setupToken } : { username });
  const response = await startRegistration({ optionsJSON: begin.options });
  const done = await call('POST', '/auth/registration-verify', { user: username, response, signupToken: begin.signupToken });
  say(status, form.dataset.msgCreated);
  location.assign(destination(done.home));
}

async function signIn() {
  const username = input.value.trim();
  // An address goes to home-realm discovery first: its domain may belong to an org's connection.
  if (username.includes('@') && (await discover(username))) return;
  say(status, form.dataset.msgWaiting);
  const begin = await call('GET', '/auth/assertion-options' + (username ? '?user=' + encodeURIComponent(username) : ''));
  const response = await startAuthentication({ optionsJSON: begin.options });
  await finishSignIn(username ? { user: username, response } : { response });
}

async function finishSignIn(body) {
  const done = await call('POST', '/auth/assertion-verify', body);
  say(status, form.dataset.msgSignedIn);
  location.assign(destination(done.home));
}

/**
 * Home-realm discovery (docs/passkeys.md#autofill): POST /auth/discover {email} names the org
 * connection the address's domain signs in through, if any; the page then shows that connection's
 * button (GET /auth?connection=…). True when the browser is on its way there. Where the route is
 * missing (404) or names no connection, the address is tried as a username, as before.
 */
async function discover(email) {
  let found;
  try {
    found = await call('POST', '/auth/discover', { email });
  } catch {
    return false;
  }
  const connection = found && found.connection;
  if (!connection || typeof connection.connectionId !== 'string') return false;
  const next = new URLSearchParams({ connection: connection.connectionId });
  if (back) next.set('return', back);
  location.assign('/auth?' + next.toString());
  return true;
}

/**
 * Passkey autofill (conditional mediation): a usernameless request started on load, answered when
 * the person picks a passkey from the identifier field's suggestions. It never blocks the button:
 * the button's own request aborts it (SimpleWebAuthn's abort service), and it starts again after
 * the button's request ends without signing in. Browsers without it keep the button only.
 */
async function startAutofill() {
  if (!browserSupportsWebAuthn() || !(await browserSupportsWebAuthnAutofill())) return;
  let response;
  try {
    const begin = await call('GET', '/auth/assertion-options');
    response = await startAuthentication({ optionsJSON: begin.options, useBrowserAutofill: true });
  } catch {
    return; // aborted by the button, expired or unsupported: the button still works
  }
  if (busy) return;
  busy = true;
  try {
    await finishSignIn({ response });
  } catch (error) {
    sayInvalid(status, null, describe(error));
    // sso_required: this passkey only confirms a sign-in at the org's identity provider, so asking
    // for it again would only be refused again; the person signs in through the org instead.
    if (!error || error.reason !== 'sso_required') startAutofill();
  } finally {
    busy = false;
  }
}

async function run(action) {
  if (busy) return;
  busy = true;
  try {
    await (action === 'signup' ? signUp() : signIn());
  } catch (error) {
    const nameWrong = error && ['invalid_username', 'username_taken'].includes(error.reason);
    sayInvalid(status, nameWrong ? input : null, describe(error));
    if (!error || error.reason !== 'sso_required') startAutofill();
  } finally {
    busy = false;
  }
}

form.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  if (button) run(button.dataset.action);
});
// Enter in the field signs in (or signs up on the founder setup link).
form.addEventListener('submit', (event) => {
  event.preventDefault();
  run(setupToken ? 'signup' : 'signin');
});
startAutofill();
`;
