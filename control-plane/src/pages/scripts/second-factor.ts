/** The /account page's TOTP, backup-code and e-mail sections (module source text, no build step). */
export const SECOND_FACTOR_JS = String.raw`
import { call, describe, say, sayInvalid } from '/assets/common.js';

const status = document.getElementById('second-factor-status');
// The field a refused form's error is about (the others have no field: the status line says it).
const FIELDS = { 'totp-confirm': 'totp-code', 'email-add': 'email-new' };
function fail(error, field = null) {
  sayInvalid(status, field, describe(error));
}

const actions = {
  async 'totp-setup'() {
    const setup = await call('POST', '/auth/totp/setup');
    const panel = document.getElementById('totp-setup-panel');
    const img = document.getElementById('totp-qr');
    img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(setup.qrSvg);
    document.getElementById('totp-secret').textContent = setup.secret;
    panel.hidden = false;
    document.getElementById('totp-code').focus();
    say(status, status.dataset.msgScan || 'Scan the code with your authenticator app, then enter the 6-digit code it shows.');
  },
  async 'totp-disable'() {
    if (!confirm(status.dataset.msgDisableConfirm || 'Turn off TOTP for this account?')) return;
    await call('POST', '/auth/totp/disable');
    say(status, status.dataset.msgOff || 'TOTP is off.');
    setTimeout(() => location.reload(), 400);
  },
  async 'recovery-regenerate'() {
    if (!confirm(status.dataset.msgRegenerateConfirm || 'Make 10 new backup codes? Your old codes stop working.')) return;
    const { codes } = await call('POST', '/auth/recovery/regenerate');
    const list = document.getElementById('recovery-codes');
    list.replaceChildren(...codes.map((code) => {
      const item = document.createElement('li');
      const text = document.createElement('code');
      text.textContent = code;
      item.append(text);
      return item;
    }));
    document.getElementById('recovery-panel').hidden = false;
    document.getElementById('recovery-count').textContent = status.dataset.msgFreshCount || codes.length + ' unused backup codes.';
    say(status, status.dataset.msgRegenerated || 'New backup codes made. Save them now: they are shown only this once.');
  },
};

document.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-sf-action]');
  const action = button && actions[button.dataset.sfAction];
  if (!action) return;
  try {
    await action(button);
  } catch (error) {
    fail(error);
  }
});

const forms = {
  async 'totp-confirm'(data) {
    await call('POST', '/auth/totp/confirm', { code: String(data.get('code') || '').replace(/\s+/g, '') });
    say(status, status.dataset.msgOn || 'TOTP is on.');
    setTimeout(() => location.reload(), 400);
  },
  async 'email-add'(data, form) {
    const result = await call('POST', '/auth/email/add', { email: data.get('email') });
    const line = result.sent ? status.dataset.msgEmailSent : status.dataset.msgEmailVerified;
    say(status, line ? line.replace('{email}', result.email) : result.sent ? 'We sent a confirmation link to ' + result.email + '.' : result.email + ' is verified already.');
    form.reset();
    // List the address at once, pending until its link is opened (the page shows the same after a reload).
    const list = document.getElementById('email-list');
    if (list && result.sent && !list.querySelector('[data-email="' + CSS.escape(result.email) + '"]')) {
      const item = document.createElement('li');
      item.dataset.email = result.email;
      const note = document.createElement('span');
      note.className = 'muted';
      note.textContent = status.dataset.msgWaiting || '(waiting for confirmation: open the link we mailed)';
      item.append(result.email + ' ', note);
      list.append(item);
      document.querySelector('[data-field="no-emails"]')?.parentElement?.replaceChildren(status.dataset.msgEmails || 'E-mail addresses');
    }
  },
};

document.addEventListener('submit', async (event) => {
  const form = event.target;
  const send = forms[form.dataset.sfForm];
  if (!send) return;
  event.preventDefault();
  try {
    await send(new FormData(form), form);
  } catch (error) {
    fail(error, document.getElementById(FIELDS[form.dataset.sfForm]));
  }
});
`;
