/** The link page of a connection (docs/federation.md#linking-a-personal-account): a passkey of the account confirms the link. */
export const FEDERATION_LINK_JS = String.raw`
import { startAuthentication } from '/assets/simplewebauthn/index.js';
import { call, describe, say, sayInvalid } from '/assets/common.js';

const form = document.getElementById('link-form');
const status = document.getElementById('status');

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  try {
    say(status, form.dataset.msgWaiting);
    const link = form.dataset.link;
    const begin = await call('POST', '/account/connections/link/options', { link });
    const response = await startAuthentication({ optionsJSON: begin.options });
    await call('POST', '/account/connections/link/verify', { link, response });
    say(status, form.dataset.msgDone);
    location.assign('/account');
  } catch (error) {
    sayInvalid(status, null, describe(error));
  }
});
`;
