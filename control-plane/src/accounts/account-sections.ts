import type { Translator } from '#lib/i18n/translate.js';
import { RECOVERY_CODE_COUNT } from '#lib/recovery/recovery-codes.js';
import { html, type SafeHtml } from '../pages/layout.js';
import type { ControlPlaneServices } from '../context.js';
import { claimingOrgs } from '../orgs/claimed-addresses.js';
import { accountConnections, mayLink } from '../federation/link-connection.js';

/** A section of the /account page, rendered with the page's translator (docs/i18n.md). */
export type AccountSection = (ui: Translator) => SafeHtml;

/** What these functions read. */
export type ExtrasServices = Pick<ControlPlaneServices, 'storage'>;

/**
 * The account's e-mail addresses and TOTP state, owned by the TOTP / recovery / e-mail area, and
 * that area's sections of the /account page (script: /assets/second-factor.js, served by the TOTP
 * routes).
 */
export interface AccountExtras {
  /** `claimedBy`: the name of the org whose proved mail domain claims the address (docs/orgs.md#claimed-addresses). */
  emails: Array<{ email: string; verified: boolean; claimedBy?: string }>;
  totp: 'off' | 'pending' | 'active';
  /** Extra sections for the /account HTML page (TOTP, recovery codes, e-mail), rendered in order in the page's language. */
  sections?: AccountSection[];
  /** Extra module scripts for the /account page, served by that area's routes. */
  scripts?: string[];
  /** Origins the page's forms may end at (CSP form-action): the upstreams its "Connect" buttons go to. */
  formAction?: string[];
}

export async function accountExtras(services: ExtrasServices, identityId: string): Promise<AccountExtras> {
  const [emails, totp, codes, identity] = await Promise.all([
    services.storage.emails.listByIdentity(identityId),
    services.storage.totp.get(identityId),
    services.storage.recoveryCodes.listUnused(identityId),
    services.storage.identities.get(identityId),
  ]);
  const state = totp?.state ?? 'off';
  const connections = (await mayLink(services, identityId)) ? await accountConnections(services, identityId) : [];
  const claimed = await claimingOrgs(services.storage, identity, emails);
  const orgNames = new Map<string, string>();
  for (const orgId of new Set(claimed.values()))
    orgNames.set(orgId, (await services.storage.orgs.get(orgId))?.name ?? '');
  return {
    emails: emails.map((e) => {
      const claimedBy = claimed.get(e.email);
      return claimedBy === undefined
        ? { email: e.email, verified: e.verifiedAt !== null }
        : { email: e.email, verified: false, claimedBy: orgNames.get(claimedBy)! };
    }),
    totp: state,
    sections: [
      secondFactorSections(state, codes.length),
      ...(connections.length > 0 ? [connectionsSection(connections)] : []),
    ],
    scripts: ['/assets/second-factor.js'],
    ...(connections.some((c) => c.linkedAt === null)
      ? { formAction: [...new Set(connections.filter((c) => c.linkedAt === null).map((c) => c.origin))] }
      : {}),
  };
}

function secondFactorSections(totp: 'off' | 'pending' | 'active', unusedCodes: number): AccountSection {
  // The script's lines, translated (docs/i18n.md): it reads them from these data-msg-* attributes
  // (`{email}` is left for the script to fill in).
  return ({ t }) => html`<p id="second-factor-status" role="status" aria-live="polite"
 data-msg-scan="${t('account.sf.js.scan')}" data-msg-disable-confirm="${t('account.sf.js.disable_confirm')}"
 data-msg-off="${t('account.sf.js.off')}" data-msg-on="${t('account.sf.js.on')}"
 data-msg-regenerate-confirm="${t('account.sf.js.regenerate_confirm', { count: RECOVERY_CODE_COUNT })}"
 data-msg-regenerated="${t('account.sf.js.regenerated')}"
 data-msg-fresh-count="${t('account.sf.recovery_count', { count: RECOVERY_CODE_COUNT })}"
 data-msg-waiting="${t('account.sf.js.waiting')}" data-msg-emails="${t('account.emails')}"
 data-msg-email-sent="${t('account.sf.js.email_sent', { email: '{email}' })}"
 data-msg-email-verified="${t('account.sf.js.email_verified', { email: '{email}' })}"></p>
<h3 id="totp-h">${t('account.sf.totp_heading')}</h3>
${
  totp === 'active'
    ? html`<p>${t('account.sf.totp_on')}</p>
<p><button type="button" class="secondary" data-sf-action="totp-disable" aria-describedby="totp-disable-help">${t('account.sf.totp_disable')}</button></p>
<p id="totp-disable-help" class="muted">${t('account.sf.totp_disable_help')}</p>`
    : html`<p>${totp === 'pending' ? t('account.sf.totp_pending') : t('account.sf.totp_off')}</p>
<p><button type="button" data-sf-action="totp-setup">${totp === 'pending' ? t('account.sf.totp_restart') : t('account.sf.totp_setup')}</button></p>
<div id="totp-setup-panel" hidden>
  <img id="totp-qr" alt="${t('account.sf.totp_qr_alt')}" width="200" height="200">
  <p>${t('account.sf.totp_key')} <code id="totp-secret"></code></p>
  <form data-sf-form="totp-confirm" aria-labelledby="totp-h">
    <label for="totp-code">${t('account.sf.totp_code')}</label>
    <input id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" required>
    <button type="submit">${t('account.sf.totp_turn_on')}</button>
  </form>
</div>`
}
<h3 id="recovery-h">${t('account.sf.recovery_heading')}</h3>
<p><span id="recovery-count">${t('account.sf.recovery_count', { count: unusedCodes })}</span> ${t('account.sf.recovery_each')}</p>
<p><button type="button" class="secondary" data-sf-action="recovery-regenerate">${t('account.sf.recovery_regenerate')}</button></p>
<div id="recovery-panel" hidden>
  <p><strong>${t('account.sf.recovery_save')}</strong></p>
  <ol id="recovery-codes" aria-labelledby="recovery-h"></ol>
</div>
<h3 id="email-h">${t('account.sf.email_heading')}</h3>
<form data-sf-form="email-add" aria-labelledby="email-h">
  <label for="email-new">${t('account.sf.email_label')}</label>
  <input id="email-new" name="email" type="email" autocomplete="email" maxlength="254" required aria-describedby="email-help">
  <p id="email-help" class="muted">${t('account.sf.email_help')}</p>
  <button type="submit">${t('account.sf.email_add')}</button>
</form>`;
}

/**
 * The instance-wide connections a personal account may link itself to (docs/federation.md#linking-a-personal-account):
 * "Connect" signs in upstream and comes back to confirm with a passkey; "Remove" unlinks. Plain forms.
 */
function connectionsSection(
  connections: Array<{ connectionId: string; name: string; linkedAt: number | null }>,
): AccountSection {
  return ({ t }) => html`<h3 id="connections-h">${t('account.connections.heading')}</h3>
<p class="muted">${t('account.connections.explain')}</p>
<ul aria-labelledby="connections-h" data-field="connections">${connections.map(
    (c) =>
      html`<li data-connection="${c.connectionId}"><strong>${c.name}</strong> ${
        c.linkedAt === null
          ? html`<form method="post" action="/account/connections/${c.connectionId}/connect"><button type="submit" data-action="connect">${t('account.connections.connect', { name: c.name })}</button></form>`
          : html`<span data-linked>${t('account.connections.linked')}</span> <form method="post" action="/account/connections/${c.connectionId}/remove"><button type="submit" class="secondary" data-action="unlink">${t('account.connections.remove', { name: c.name })}</button></form>`
      }</li>`,
  )}</ul>`;
}
