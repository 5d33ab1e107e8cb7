import { html, type SafeHtml } from '../../pages/layout.js';
import type { PageUi } from '../../pages/ui.js';
import type { PolicyView } from '../../passkeys/policy.js';

/**
 * The passkey policy section of the org page, for owners (docs/passkeys.md#org-policy): what is in
 * effect, and a form that previews what a change would refuse (`data-then="preview"`) before it is
 * saved with `PUT` (forms.js sends the AAGUID fields as lists, the grace as a number).
 */
export function passkeyPolicySection(slug: string, view: PolicyView, ui: PageUi): SafeHtml {
  const { t } = ui;
  const path = `/org/${encodeURIComponent(slug)}/passkey-policy`;
  const when = (iso: string) => `${ui.dateTime(Date.parse(iso))} UTC`;
  const set = view.effective_at !== undefined && view.grace_until !== undefined;
  const option = (value: 'none' | 'required', label: string) =>
    html`<option value="${value}"${view.attestation === value ? html` selected` : ''}>${label}</option>`;
  return html`<h2 id="passkey-policy-h">${t('orgs.passkey_policy.heading')}</h2>
<p>${t('orgs.passkey_policy.intro')}</p>
<p data-field="passkey-policy-state">${
    set
      ? t('orgs.passkey_policy.current', {
          since: when(view.effective_at!),
          until: when(view.grace_until!),
          refused: view.would_refuse,
          passkeys: view.passkeys,
        })
      : t('orgs.passkey_policy.none_set')
  }</p>
${view.metadata.loaded ? '' : html`<p class="muted" data-field="metadata-missing">${t('orgs.passkey_policy.metadata_missing')}</p>`}
<form method="post" data-kp-post data-method="PUT" action="${path}" aria-labelledby="passkey-policy-h" data-msg-would-refuse="${t('orgs.passkey_policy.would_refuse', { refused: '{refused}', passkeys: '{passkeys}', days: '{days}' })}">
<label for="pp-allowed">${t('orgs.passkey_policy.allowed')}</label> <textarea id="pp-allowed" name="aaguids_allowed" data-list rows="2">${view.aaguids_allowed.join('\n')}</textarea>
<label for="pp-denied">${t('orgs.passkey_policy.denied')}</label> <textarea id="pp-denied" name="aaguids_denied" data-list rows="2">${view.aaguids_denied.join('\n')}</textarea>
<label for="pp-attestation">${t('orgs.passkey_policy.attestation')}</label> <select id="pp-attestation" name="attestation">${option('none', t('orgs.passkey_policy.attestation_none'))}${option('required', t('orgs.passkey_policy.attestation_required'))}</select>
<label for="pp-grace">${t('orgs.passkey_policy.grace_days')}</label> <input id="pp-grace" name="grace_days" type="number" min="0" max="365" data-number value="${String(view.grace_days)}">
<p id="passkey-policy-preview" role="status" aria-live="polite"></p>
<button type="submit" class="secondary" formaction="${path}/preview" data-method="POST" data-then="preview" data-action="preview-passkey-policy">${t('orgs.passkey_policy.preview')}</button>
<button type="submit" data-action="save-passkey-policy">${t('orgs.passkey_policy.save')}</button></form>`;
}
