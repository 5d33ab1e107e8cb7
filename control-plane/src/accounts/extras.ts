import { html, type SafeHtml } from '../pages/layout.js';
import type { ControlPlaneServices } from '../context.js';

/** What these functions read. */
export type ExtrasServices = Pick<ControlPlaneServices, 'storage'>;

/**
 * The account's e-mail addresses and TOTP state, owned by the TOTP / recovery / e-mail area, and
 * that area's sections of the /account page (script: /assets/second-factor.js, served by the TOTP
 * routes).
 */
export interface AccountExtras {
  emails: Array<{ email: string; verified: boolean }>;
  totp: 'off' | 'pending' | 'active';
  /** Extra sections for the /account HTML page (TOTP, recovery codes, e-mail), rendered in order. */
  sections?: SafeHtml[];
  /** Extra module scripts for the /account page, served by that area's routes. */
  scripts?: string[];
}

export async function accountExtras(services: ExtrasServices, identityId: string): Promise<AccountExtras> {
  const [emails, totp, codes] = await Promise.all([
    services.storage.emails.listByIdentity(identityId),
    services.storage.totp.get(identityId),
    services.storage.recoveryCodes.listUnused(identityId),
  ]);
  const state = totp?.state ?? 'off';
  return {
    emails: emails.map((e) => ({ email: e.email, verified: e.verifiedAt !== null })),
    totp: state,
    sections: [secondFactorSections(state, codes.length)],
    scripts: ['/assets/second-factor.js'],
  };
}

function secondFactorSections(totp: 'off' | 'pending' | 'active', unusedCodes: number): SafeHtml {
  return html`<p id="second-factor-status" role="status" aria-live="polite"></p>
<h3 id="totp-h">Authenticator app (TOTP)</h3>
${
  totp === 'active'
    ? html`<p>TOTP is on: confirming it is you (step up) asks for a code from your app.</p>
<p><button type="button" class="secondary" data-sf-action="totp-disable" aria-describedby="totp-disable-help">Turn off TOTP</button></p>
<p id="totp-disable-help" class="muted">Turning it off needs a step-up in the last 5 minutes, or a sign-in with a backup code in the last 5 minutes.</p>`
    : html`<p>${totp === 'pending' ? 'Setup was started but not confirmed.' : 'Add a second step for sensitive actions with an authenticator app.'}</p>
<p><button type="button" data-sf-action="totp-setup">${totp === 'pending' ? 'Restart setup' : 'Set up TOTP'}</button></p>
<div id="totp-setup-panel" hidden>
  <img id="totp-qr" alt="QR code to scan with your authenticator app" width="200" height="200">
  <p>Can't scan? Enter this key: <code id="totp-secret"></code></p>
  <form data-sf-form="totp-confirm" aria-labelledby="totp-h">
    <label for="totp-code">6-digit code from the app</label>
    <input id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" required>
    <button type="submit">Turn on TOTP</button>
  </form>
</div>`
}
<h3 id="recovery-h">Backup codes</h3>
<p><span id="recovery-count">${unusedCodes ? `${unusedCodes} unused backup code${unusedCodes === 1 ? '' : 's'}.` : 'No backup codes yet.'}</span> Each signs you in once if you lose your passkeys.</p>
<p><button type="button" class="secondary" data-sf-action="recovery-regenerate">Make new backup codes</button></p>
<div id="recovery-panel" hidden>
  <p><strong>Save these now; they are shown only once.</strong></p>
  <ol id="recovery-codes" aria-labelledby="recovery-h"></ol>
</div>
<h3 id="email-h">Add an e-mail address</h3>
<form data-sf-form="email-add" aria-labelledby="email-h">
  <label for="email-new">E-mail address</label>
  <input id="email-new" name="email" type="email" autocomplete="email" maxlength="254" required aria-describedby="email-help">
  <p id="email-help" class="muted">We send a link to confirm it. Confirming does not sign anyone in. Verified addresses can receive sign-in links.</p>
  <button type="submit">Add address</button>
</form>`;
}
