/** The /auth/enrol page: creates the passkey of a provisioned account from its mailed link, then goes on to the account. */
export const ENROL_JS = String.raw`
import { startRegistration } from '/assets/simplewebauthn/index.js';
import { call, describe, say, PAGE_MESSAGES } from '/assets/common.js';

const form = document.getElementById('enrol-form');
const status = document.getElementById('status');
const lines = (PAGE_MESSAGES && PAGE_MESSAGES.lines) || {};
form.hidden = false;
document.getElementById('enrol-needs-js').hidden = true;

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = form.elements.token.value;
  try {
    const begin = await call('POST', '/auth/enrol/options', { token });
    const response = await startRegistration({ optionsJSON: begin.options });
    const done = await call('POST', '/auth/enrol/verify', { token, response });
    say(status, lines.done || 'Passkey created. You are signed in.');
    location.assign(done.home);
  } catch (error) {
    say(status, describe(error), true);
  }
});
`;
