/** The /account page: profile, preferences, passkeys, sessions, devices, sign-out. */
export const ACCOUNT_JS = String.raw`
import { startRegistration } from '/assets/simplewebauthn/index.js';
import { act, call, describe, say, PAGE_MESSAGES } from '/assets/common.js';

const status = document.getElementById('status');
// The page's lines in its language (docs/i18n.md); English where a page renders none.
const lines = (PAGE_MESSAGES && PAGE_MESSAGES.lines) || {};
const line = (name, english) => lines[name] || english;

const actions = {
  async signout() {
    await call('POST', '/auth/signout');
    location.assign('/auth?done=signed-out');
  },
  'add-passkey': () => act(async () => {
    const begin = await call('POST', '/auth/passkeys/add-options');
    const response = await startRegistration({ optionsJSON: begin.options });
    await call('POST', '/auth/passkeys/add-verify', { response });
  }, line('passkeyAdded', 'Passkey added.')),
  'rename-passkey': (button) => {
    const label = prompt(line('renamePrompt', 'New label for this passkey'));
    if (label === null) return;
    return act(() => call('POST', '/auth/passkeys/rename', { credId: button.dataset.credId, label }), line('passkeyRenamed', 'Passkey renamed.'));
  },
  'remove-passkey': (button) => {
    if (!confirm(line('removeConfirm', 'Remove this passkey? You can no longer sign in with it.'))) return;
    return act(() => call('POST', '/auth/passkeys/remove', { credId: button.dataset.credId }), line('passkeyRemoved', 'Passkey removed.'));
  },
  'revoke-session': (button) => act(() => call('POST', '/auth/sessions/revoke', { identifier: button.dataset.identifier }), line('sessionRevoked', 'Session revoked.')),
  'revoke-device': (button) => act(() => call('POST', '/auth/devices/revoke', { deviceId: button.dataset.deviceId }), line('deviceRevoked', 'Device revoked.')),
};

document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-action]');
  const action = button && actions[button.dataset.action];
  if (!action) return;
  try {
    await action(button);
  } catch (error) {
    say(status, describe(error), true);
  }
});

const forms = {
  profile: (data) => call('POST', '/auth/profile', { displayName: data.get('displayName') }),
  rename: (data) => call('POST', '/auth/account/rename', { newUsername: data.get('newUsername') }),
  preferences: (data) => {
    const preferences = {};
    for (const [key, value] of data.entries()) preferences[key] = value === '' ? null : value;
    return call('POST', '/auth/preferences', { preferences });
  },
};

async function deleteAccount(data) {
  if (!confirm(line('deleteConfirm', 'Delete your account for good? This cannot be undone.'))) return;
  try {
    await call('POST', '/account/delete', { confirm: data.get('confirm') });
    say(status, line('deleted', 'Your account was deleted.'));
    location.assign('/auth?done=account-deleted');
  } catch (error) {
    say(status, describe(error), true);
  }
}

document.addEventListener('submit', (event) => {
  const form = event.target;
  if (form.dataset.form === 'delete-account') {
    event.preventDefault();
    return deleteAccount(new FormData(form));
  }
  const send = forms[form.dataset.form];
  if (!send) return;
  event.preventDefault();
  act(() => send(new FormData(form)), line('saved', 'Saved.'));
});
`;
