/** The /auth/step-up page: re-verify a passkey (plus TOTP when active), then go back. */
export const STEP_UP_JS = String.raw`
import { startAuthentication } from '/assets/simplewebauthn/index.js';
import { call, describe, say } from '/assets/common.js';

const form = document.getElementById('step-up-form');
const status = document.getElementById('status');
const code = document.getElementById('totp-code');

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    say(status, form.dataset.msgWaiting);
    const begin = await call('POST', '/auth/step-up/options');
    const response = await startAuthentication({ optionsJSON: begin.options });
    const totpCode = code ? code.value.trim() : '';
    await call('POST', '/auth/step-up/verify', totpCode ? { response, totpCode } : { response });
    say(status, form.dataset.msgConfirmed);
    location.assign(form.dataset.return);
  } catch (error) {
    say(status, describe(error), true);
    if (code && error && (error.reason === 'totp_required' || error.reason === 'totp_invalid' || error.reason === 'totp_replayed')) code.focus();
  }
});
`;
