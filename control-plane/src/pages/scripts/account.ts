/** The /account page: profile, preferences, passkeys (with the Signal API and the upgrade offer), sessions, devices, sign-out. */
export const ACCOUNT_JS = String.raw`
import { startRegistration, WebAuthnAbortService } from '/assets/simplewebauthn/index.js';
import { act, call, describe, say, PAGE_MESSAGES } from '/assets/common.js';

const status = document.getElementById('status');
// The page's lines in its language (docs/i18n.md); English where a page renders none.
const lines = (PAGE_MESSAGES && PAGE_MESSAGES.lines) || {};
const line = (name, english) => lines[name] || english;
// What the WebAuthn Signal API needs to know about the account (docs/passkeys.md#the-signal-api).
const passkeyTable = document.querySelector('table[data-field="passkeys"]');
const account = passkeyTable ? passkeyTable.dataset : {};

/**
 * Tells the person's passkey provider about the account (WebAuthn Signal API), where the browser
 * has it; never waited for and never an error: a provider that ignores it changes nothing.
 */
function signal(method, details) {
  const api = window.PublicKeyCredential;
  if (!api || typeof api[method] !== 'function' || !account.rpId) return;
  try {
    api[method]({ rpId: account.rpId, ...details }).catch(() => {});
  } catch {
    // an older browser that throws synchronously: nothing to keep in step
  }
}

function acceptedCredentialIds() {
  return [...document.querySelectorAll('tr[data-cred-id]')].map((row) => row.dataset.credId);
}

async function addPasskey(useAutoRegister = false) {
  const begin = await call('POST', '/auth/passkeys/add-options');
  const response = await startRegistration({ optionsJSON: begin.options, useAutoRegister });
  await call('POST', '/auth/passkeys/add-verify', { response });
}

const actions = {
  async signout() {
    const done = await call('POST', '/auth/signout');
    // A session signed in through a connection signs out at its identity provider too, which sends the browser back.
    location.assign(done.upstream_logout ?? '/auth?done=signed-out');
  },
  'add-passkey': () => act(() => addPasskey(), line('passkeyAdded', 'Passkey added.')),
  'upgrade-passkey': () => act(() => addPasskey(), line('passkeyAdded', 'Passkey added.')),
  'decline-upgrade': () => act(async () => {
    WebAuthnAbortService.cancelCeremony();
    await call('POST', '/auth/passkeys/upgrade/decline');
  }, line('upgradeDeclined', 'We will ask again in a month at the earliest.')),
  'rename-passkey': (button) => {
    const label = prompt(line('renamePrompt', 'New label for this passkey'));
    if (label === null) return;
    return act(() => call('POST', '/auth/passkeys/rename', { credId: button.dataset.credId, label }), line('passkeyRenamed', 'Passkey renamed.'));
  },
  'remove-passkey': (button) => {
    if (!confirm(line('removeConfirm', 'Remove this passkey? You can no longer sign in with it.'))) return;
    return act(async () => {
      await call('POST', '/auth/passkeys/remove', { credId: button.dataset.credId });
      signal('signalUnknownCredential', { credentialId: button.dataset.credId });
    }, line('passkeyRemoved', 'Passkey removed.'));
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
  profile: async (data) => {
    const displayName = data.get('displayName');
    await call('POST', '/auth/profile', { displayName });
    signal('signalCurrentUserDetails', { userId: account.userHandle, name: account.username, displayName: displayName || account.username });
  },
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

// The passkeys the account has now, so that a provider drops one removed elsewhere (by an operator,
// or on another device) the next time the person is here after signing in.
if (account.userHandle) signal('signalAllAcceptedCredentials', { userId: account.userHandle, allAcceptedCredentialIds: acceptedCredentialIds() });

// The passkey offer after a sign-in without one: the button creates it; where the browser can,
// a conditional create (the password manager the person just used) is tried quietly first, and
// the button's own request aborts it.
if (document.getElementById('passkey-upgrade') && window.PublicKeyCredential && typeof PublicKeyCredential.getClientCapabilities === 'function') {
  PublicKeyCredential.getClientCapabilities().then(async (capabilities) => {
    if (!capabilities || !capabilities.conditionalCreate) return;
    try {
      await addPasskey(true);
      say(status, line('passkeyAdded', 'Passkey added.'));
      setTimeout(() => location.reload(), 400);
    } catch {
      // declined, aborted by the button or not offered by the browser: the button stays
    }
  }).catch(() => {});
}
`;
