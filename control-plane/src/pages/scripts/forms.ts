/**
 * /assets/forms.js: sends the org and scan pages' forms as JSON with fetch, so the request
 * carries the page's Origin (a plain form post under `Referrer-Policy: no-referrer` sends
 * `Origin: null`, which signed-in requests refuse), then reloads or moves on.
 */
export const FORMS_JS = `
import { PAGE_MESSAGES, clearInvalid, describe, sayInvalid } from '/assets/common.js';

// Translated lines of the page (docs/i18n.md): English pages keep the refusal's own message.
const page = PAGE_MESSAGES || {};
const english = !PAGE_MESSAGES || PAGE_MESSAGES.locale === 'en';

const status = document.getElementById('form-status');
/** The field a refusal is about: the e-mail field for an address, else the form's first field. */
function fieldOf(form, reason) {
  const fields = [...form.querySelectorAll('input:not([type="hidden"]), textarea, select')];
  return (reason === 'invalid_email' && fields.find((f) => f.type === 'email')) || fields[0] || null;
}
for (const form of document.querySelectorAll('form[data-kp-post]')) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    // A second submit button may send elsewhere (formaction, data-method, data-then): the passkey policy's preview.
    const submitter = event.submitter && event.submitter.form === form ? event.submitter : null;
    const button = submitter || form.querySelector('button[type="submit"]');
    if (button) button.disabled = true;
    if (status) {
      status.textContent = page.working || 'Working…';
      status.classList.remove('error');
    }
    try {
      const body = Object.fromEntries(new FormData(form));
      // Fields marked data-list go as lists (one item per line or comma), data-number as numbers (left out when empty).
      for (const field of form.querySelectorAll('[data-list]')) body[field.name] = field.value.split(/[\\s,]+/).filter(Boolean);
      for (const field of form.querySelectorAll('[data-number]')) { if (field.value === '') delete body[field.name]; else body[field.name] = Number(field.value); }
      const action = submitter && submitter.hasAttribute('formaction') ? submitter.formAction : form.action;
      const method = (submitter && submitter.dataset.method) || form.dataset.method || 'POST';
      const res = await fetch(action, { method, headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) });
      const data = await res.json().catch(() => ({}));
      if (!res.ok || !data.ok) {
        if (status) sayInvalid(status, fieldOf(form, data.reason), english ? data.message || data.reason || 'That did not work.' : describe(data));
        return;
      }
      for (const field of form.querySelectorAll('[aria-invalid="true"]')) if (status) clearInvalid(status, field);
      const then = (submitter && submitter.dataset.then) || form.dataset.then;
      if (then === 'preview') {
        // What the policy would refuse, said before it is saved (the sentence comes translated from the form).
        const line = (form.getAttribute('data-msg-would-refuse') || '{refused} of {passkeys} passkeys would be refused; they keep working for {days} days.')
          .replace('{refused}', String(data.would_refuse)).replace('{passkeys}', String(data.passkeys)).replace('{days}', String(data.grace_days));
        const preview = document.getElementById('passkey-policy-preview');
        if (preview) { preview.textContent = line; preview.dataset.wouldRefuse = String(data.would_refuse); }
        if (status) status.textContent = line;
      }
      else if (then === 'org' && data.slug) location.assign('/org/' + encodeURIComponent(data.slug));
      else if (then === 'scan' && data.rating) location.assign('/scan?url=' + encodeURIComponent(data.rating.url));
      else if (then === 'invited') {
        // Stay on the page and say what happened: the invitee accepts on their own account page.
        // The sentence comes translated from the form (data-msg-invited-<role>); only the name is filled in.
        const role = body.role || 'member';
        const invited = form.getAttribute('data-msg-invited-' + role);
        const roleName = form.getAttribute('data-msg-role-' + role) || role;
        if (status) status.textContent = invited ? invited.replace('{username}', body.username) : 'Invited ' + body.username + ' as ' + role + '. They accept it on their account page.';
        const pending = document.getElementById('pending-invites');
        if (pending) {
          pending.querySelector('[data-none]')?.remove();
          pending.querySelector('[data-pending-invite="' + CSS.escape(body.username) + '"]')?.remove();
          const item = document.createElement('li');
          item.dataset.pendingInvite = body.username;
          item.append(body.username + ' · ' + roleName + ' ');
          const mark = document.createElement('span');
          mark.className = 'muted';
          mark.textContent = form.getAttribute('data-msg-not-accepted') || '(not accepted yet)';
          item.append(mark);
          pending.append(item);
        }
        form.reset();
      }
      else if (then === 'contact') location.assign('/contact?sent=' + encodeURIComponent(data.contactId || '1'));
      else location.reload();
    } catch {
      if (status) status.textContent = page.networkFailed || 'The network failed; try again.';
    } finally {
      if (button) button.disabled = false;
    }
  });
}
`;
