/** The /auth page: passkey sign-up and sign-in (username or usernameless). */
export const AUTH_JS = String.raw`
import { startAuthentication, startRegistration, browserSupportsWebAuthn } from '/assets/simplewebauthn/index.js';
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
  say(status, form.dataset.msgWaiting);
  const begin = await call('GET', '/auth/assertion-options' + (username ? '?user=' + encodeURIComponent(username) : ''));
  const response = await startAuthentication({ optionsJSON: begin.options });
  const done = await call('POST', '/auth/assertion-verify', username ? { user: username, response } : { response });
  say(status, form.dataset.msgSignedIn);
  location.assign(destination(done.home));
}

async function run(action) {
  if (busy) return;
  busy = true;
  try {
    await (action === 'signup' ? signUp() : signIn());
  } catch (error) {
    const nameWrong = error && ['invalid_username', 'username_taken'].includes(error.reason);
    sayInvalid(status, nameWrong ? input : null, describe(error));
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
`;
