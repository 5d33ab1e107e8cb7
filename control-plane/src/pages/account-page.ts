import type { FastifyRequest } from 'fastify';
import type { MessageKey } from '#lib/i18n/translate.js';
import type { KeyplaneError } from '#lib/errors/keyplane-error.js';
import type { AccountExtras } from '../accounts/account-sections.js';
import { loadAccountView, type AccountView } from '../accounts/view.js';
import type { ErrorPage } from '../plugins/errors.js';
import { html, page, raw, type SafeHtml } from './layout.js';
import { refusalNote } from './refusal-page.js';
import { type PageUi, uiOf } from './ui.js';

/** What the account page shows besides the account: a refusal of one of its forms, and that form's input. */
export interface AccountPageExtras {
  refusal?: KeyplaneError;
  /** The refused form's fields (`request.body`), shown again in its inputs. */
  kept?: Record<string, unknown>;
}

/** The account page (docs/accounts.md#the-account), in the request's language. */
export function accountPageHtml(
  request: FastifyRequest,
  view: AccountView,
  extras: AccountExtras,
  again: AccountPageExtras = {},
): string {
  // A page answering a form post links the language switcher to /account itself.
  const ui = uiOf(request, request.method === 'GET' ? undefined : '/account');
  const session = request.kp.session!;
  return page({
    title: ui.t('account.title'),
    nonce: request.kp.cspNonce,
    ui,
    scripts: ['/assets/account.js', ...(extras.scripts ?? []), '/assets/forms.js'],
    scriptLines: accountScriptLines(ui),
    body: accountPage(
      ui,
      view,
      session.assurance,
      [
        ...(extras.sections ?? []).map((section) => section(ui)),
        approvalsSection(ui, view),
        orgsSection(ui, view, again),
      ],
      again.refusal && refusalNote(ui, again.refusal),
    ),
  });
}

/**
 * The `config.errorPage` of a plain form on the account page (an approval revoked, an org created,
 * an invite accepted): the page again with the reason and the input (docs/errors.md#one-error-path).
 */
export const accountPageAgain: ErrorPage = async (request, failure) => {
  const session = request.kp.session;
  if (!session) return undefined;
  let loaded: Awaited<ReturnType<typeof loadAccountView>>;
  try {
    loaded = await loadAccountView(request.server.kp, session.identityId, {
      sessionId: session.id,
      deviceId: session.deviceId,
      amr: session.amr,
      authTime: session.authTime,
    });
  } catch {
    return undefined; // the account cannot be read either (an outage): the shared page says why
  }
  const { view, extras } = loaded;
  const kept = (request.body ?? {}) as Record<string, unknown>;
  return accountPageHtml(request, view, extras, { refusal: failure, kept });
};

/** English keeps the unambiguous ISO form; other languages their own (Intl.DateTimeFormat, UTC). */
/** The account script's confirmations (`account.js` reads them from the page's `kp-messages` block). */
function accountScriptLines(ui: PageUi): Record<string, string> {
  return {
    passkeyAdded: ui.t('script.account.passkey_added'),
    renamePrompt: ui.t('script.account.rename_prompt'),
    passkeyRenamed: ui.t('script.account.passkey_renamed'),
    removeConfirm: ui.t('script.account.remove_confirm'),
    passkeyRemoved: ui.t('script.account.passkey_removed'),
    upgradeDeclined: ui.t('script.account.upgrade_declined'),
    sessionRevoked: ui.t('script.account.session_revoked'),
    deviceRevoked: ui.t('script.account.device_revoked'),
    deleteConfirm: ui.t('script.account.delete_confirm'),
    deleted: ui.t('script.account.deleted'),
    saved: ui.t('script.account.saved'),
  };
}

function time(ui: PageUi, ms: number | null): string {
  if (ms === null) return ui.t('account.never');
  return ui.locale === 'en' ? new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : ui.dateTime(ms);
}

/** A time as a `<time>` element, so scripts and assistive technology get the exact instant. */
function when(ui: PageUi, ms: number) {
  return html`<time datetime="${new Date(ms).toISOString()}">${time(ui, ms)}</time>`;
}

/** The account page's sections in their order, for the table of contents a person jumps from. */
const TABLE_OF_CONTENTS: readonly (readonly [string, MessageKey])[] = [
  ['profile-h', 'account.profile'],
  ['passkeys-h', 'account.passkeys'],
  ['sessions-h', 'account.sessions'],
  ['devices-h', 'account.devices'],
  ['security-h', 'account.security'],
  ['approvals-h', 'account.approvals.heading'],
  ['orgs-h', 'account.orgs.heading'],
  ['prefs-h', 'account.preferences'],
  ['delete-h', 'account.delete'],
];

function accountPage(
  ui: PageUi,
  view: AccountView,
  assurance: string,
  sections: ReturnType<typeof html>[],
  refusal?: SafeHtml,
) {
  const { t } = ui;
  const prefs = view.preferences;
  const select = (
    name: string,
    label: MessageKey,
    values: string[],
  ) => html`<label for="pref-${name}">${t(label)}</label>
<select id="pref-${name}" name="${name}"><option value="">${t('account.pref.default')}</option>${values.map((v) => html`<option value="${v}"${prefs[name] === v ? html` selected` : ''}>${v}</option>`)}</select>`;
  return html`<h1>${t('account.title')}</h1>
<p>${t('account.signed_in_as')} <strong data-field="username">${view.username}</strong>${view.displayName ? html` (${view.displayName})` : ''}.
${t('account.assurance')} <strong data-field="assurance">${assurance}</strong>. ${view.founder ? html`<strong>${t('account.founder')}</strong>` : ''}</p>
${view.aliases.length ? html`<p class="muted">${t('account.aliases', { names: view.aliases.join(', ') })}</p>` : ''}
${refusal ? html`<p id="form-error" role="alert" class="error">${refusal}</p>\n` : ''}<p id="status" role="status" aria-live="polite"></p>
${view.passkeyUpgrade ? passkeyUpgradeOffer(ui, view.passkeyStepUpOnly) : ''}
${view.passkeysToReplace ? passkeyReplacePrompt(ui, view.passkeysToReplace) : ''}
<p><button type="button" data-action="signout">${t('account.sign_out')}</button> <a href="/auth/step-up?return=/account">${t('account.step_up')}</a> · <a href="/account/export" download>${t('account.export')}</a></p>
<nav aria-labelledby="toc-h" data-field="toc"><h2 id="toc-h">${t('account.toc')}</h2><ul>${TABLE_OF_CONTENTS.map(([id, key]) => html`<li><a href="#${id}">${t(key)}</a></li>`)}</ul></nav>

<h2 id="profile-h">${t('account.profile')}</h2>
<form data-form="profile" aria-labelledby="profile-h">
  <label for="display-name">${t('account.display_name')}</label>
  <input id="display-name" name="displayName" maxlength="64" value="${view.displayName}">
  <button type="submit">${t('account.save_name')}</button>
</form>
<form data-form="rename" aria-labelledby="profile-h">
  <label for="new-username">${t('signin.username')}</label>
  <input id="new-username" name="newUsername" autocapitalize="none" spellcheck="false" value="${view.username}" aria-describedby="username-help">
  <p id="username-help" class="muted">${t('account.username_help')}</p>
  <button type="submit">${t('account.change_username')}</button>
</form>

<h2 id="passkeys-h">${t('account.passkeys')}</h2>
<table aria-labelledby="passkeys-h" data-field="passkeys" data-rp-id="${view.rpId}" data-user-handle="${view.userHandle}" data-username="${view.username}" data-display-name="${view.displayName}"><thead><tr><th scope="col">${t('account.col.label')}</th><th scope="col">${t('account.col.authenticator')}</th><th scope="col">${t('account.col.added')}</th><th scope="col">${t('account.col.last_used')}</th><th scope="col">${t('account.col.actions')}</th></tr></thead><tbody>
${view.passkeys.map(
  (
    p,
  ) => html`<tr data-cred-id="${p.credId}"><td>${p.label}</td><td data-field="authenticator">${authenticatorCell(ui, p.authenticator)}</td><td>${time(ui, p.createdAt)}</td><td>${time(ui, p.lastUsedAt)}</td>
<td><button type="button" class="secondary" data-action="rename-passkey" data-cred-id="${p.credId}" aria-label="${t('account.rename_label', { label: p.label })}">${t('account.rename')}</button>
<button type="button" class="secondary" data-action="remove-passkey" data-cred-id="${p.credId}" aria-label="${t('account.remove_label', { label: p.label })}"${view.passkeys.length <= 1 ? html` disabled title="${t('account.last_passkey')}"` : ''}>${t('account.remove')}</button></td></tr>`,
)}
</tbody></table>
<button type="button" data-action="add-passkey">${t('account.add_passkey')}</button>

<h2 id="sessions-h">${t('account.sessions')}</h2>
<table aria-labelledby="sessions-h"><thead><tr><th scope="col">${t('account.col.browser')}</th><th scope="col">${t('account.col.signed_in')}</th><th scope="col">${t('account.col.last_active')}</th><th scope="col">${t('account.col.assurance')}</th><th scope="col">${t('account.col.actions')}</th></tr></thead><tbody>
${view.sessions.map(
  (
    s,
  ) => html`<tr data-session="${s.identifier}"><td><span data-field="device-label">${s.label}</span>${s.current ? html` <strong class="tag" data-field="this-session">${t('account.this_session')}</strong>` : s.thisDevice ? html` <strong class="tag" data-field="this-device">${t('account.this_device')}</strong>` : ''}</td><td>${when(ui, s.createdAt)}</td><td>${when(ui, s.lastSeenAt)}</td><td>${s.assurance}</td>
<td><button type="button" class="secondary" data-action="revoke-session" data-identifier="${s.identifier}" aria-label="${t('account.revoke_session_label', { label: s.label, action: s.current ? t('account.sign_out') : t('account.revoke') })}">${s.current ? t('account.sign_out') : t('account.revoke')}</button></td></tr>`,
)}
</tbody></table>

<h2 id="devices-h">${t('account.devices')}</h2>
<table aria-labelledby="devices-h"><thead><tr><th scope="col">${t('account.col.browser')}</th><th scope="col">${t('account.col.first_seen')}</th><th scope="col">${t('account.col.last_seen')}</th><th scope="col">${t('account.col.actions')}</th></tr></thead><tbody>
${view.devices.map(
  (
    d,
  ) => html`<tr data-device="${d.deviceId}"><td><span data-field="device-label">${d.label}</span>${d.current ? html` <strong class="tag" data-field="this-device">${t('account.this_device')}</strong>` : ''}</td><td>${when(ui, d.createdAt)}</td><td>${when(ui, d.lastSeenAt)}</td>
<td><button type="button" class="secondary" data-action="revoke-device" data-device-id="${d.deviceId}" aria-label="${t('account.revoke_device_label', { label: d.label, current: d.current ? 'yes' : 'no' })}">${t('account.revoke_device')}</button></td></tr>`,
)}
</tbody></table>

<h2 id="security-h">${t('account.security')}</h2>
<p>${t('account.totp')} <strong data-field="totp">${view.totp}</strong></p>
<p id="emails-h">${t('account.emails')}${view.emails.length ? '' : html`: <span data-field="no-emails">${t('account.no_emails')}</span>`}</p>
<ul id="email-list" aria-labelledby="emails-h">${view.emails.map((e) => html`<li data-email="${e.email}">${e.email} <span class="muted">${e.claimedBy !== undefined ? t('account.email_claimed', { org: e.claimedBy }) : e.verified ? t('account.verified') : t('account.unverified')}</span></li>`)}</ul>
${sections}

<h2 id="prefs-h">${t('account.preferences')}</h2>
<form data-form="preferences" aria-labelledby="prefs-h">
${select('theme', 'account.pref.theme', ['system', 'light', 'dark'])}
${select('contrast', 'account.pref.contrast', ['normal', 'more', 'less'])}
${select('motion', 'account.pref.motion', ['full', 'reduce'])}
${select('text', 'account.pref.text', ['normal', 'large', 'larger'])}
${select('email', 'account.pref.email', ['all', 'security', 'none'])}
<label for="pref-lang">${t('account.pref.lang')}</label>
<input id="pref-lang" name="lang" value="${prefs['lang'] ?? ''}" placeholder="en" autocapitalize="none" spellcheck="false">
<button type="submit">${t('account.save_prefs')}</button>
</form>

<h2 id="delete-h">${t('account.delete')}</h2>
<form data-form="delete-account" aria-labelledby="delete-h" aria-describedby="delete-help">
<p id="delete-help">${t('account.delete_help')}${assurance === 'sensitive' ? '' : html` ${raw(ui.rich('account.delete_step_up', { stepup: (c) => `<a href="/auth/step-up?return=/account">${c}</a>` }))}`}</p>
<label for="delete-confirm">${raw(ui.rich('account.delete_confirm', { strong: (c) => `<strong>${c}</strong>` }, { username: view.username }))}</label>
<input id="delete-confirm" name="confirm" required autocomplete="off" autocapitalize="none" spellcheck="false">
<button type="submit" class="danger" data-action="delete-account">${t('account.delete')}</button>
</form>`;
}

/** The authenticator a passkey came from: its icon (a small SVG data: URI from the AAGUID list) and name. */
function authenticatorCell(ui: PageUi, authenticator: AccountView['passkeys'][number]['authenticator']) {
  if (!authenticator) return html`<span class="muted">${ui.t('account.authenticator_unknown')}</span>`;
  return html`${authenticator.icon ? html`<img src="${authenticator.icon}" alt="" width="16" height="16"> ` : ''}${authenticator.name}`;
}

/**
 * The passkey offered to a session that signed in without one (docs/passkeys.md#upgrades): one click
 * creates it; account.js also tries the browser's conditional create where there is one. For an
 * account whose org requires SSO it is offered as what it is there: the step-up after the upstream.
 */
function passkeyUpgradeOffer(ui: PageUi, stepUpOnly: boolean) {
  const { t } = ui;
  return html`<section id="passkey-upgrade" data-field="passkey-upgrade" aria-labelledby="upgrade-h">
<h2 id="upgrade-h">${t(stepUpOnly ? 'account.upgrade.heading_sso' : 'account.upgrade.heading')}</h2>
<p>${t(stepUpOnly ? 'account.upgrade.text_sso' : 'account.upgrade.text')}</p>
<p><button type="button" data-action="upgrade-passkey">${t('account.upgrade.create')}</button> <button type="button" class="secondary" data-action="decline-upgrade">${t('account.upgrade.later')}</button></p>
</section>`;
}

/**
 * The re-enrolment prompt (docs/passkeys.md#org-policy): passkeys the org's policy refuses keep
 * signing in until the grace ends; one click adds another.
 */
function passkeyReplacePrompt(ui: PageUi, replace: NonNullable<AccountView['passkeysToReplace']>) {
  const { t } = ui;
  const date = `${ui.dateTime(replace.graceUntil)} UTC`;
  return html`<section id="passkey-replace" data-field="passkey-replace" role="alert" aria-labelledby="replace-h">
<h2 id="replace-h">${t('account.replace_passkey.heading')}</h2>
${replace.passkeys.map((p) => html`<p data-replace-cred-id="${p.credId}" data-why="${p.why}">${t('account.replace_passkey.text', { name: p.authenticator, label: p.label, date })}</p>`)}
<p><button type="button" data-action="add-passkey">${t('account.add_passkey')}</button></p>
</section>`;
}

const ORG_ROLE_KEYS = {
  owner: 'orgs.role.owner',
  admin: 'orgs.role.admin',
  member: 'orgs.role.member',
} as const;

function roleName(ui: PageUi, role: string): string {
  return role in ORG_ROLE_KEYS ? ui.t(ORG_ROLE_KEYS[role as keyof typeof ORG_ROLE_KEYS]) : role;
}

function approvalsSection(ui: PageUi, view: AccountView) {
  const { t } = ui;
  return html`<h2 id="approvals-h">${t('account.approvals.heading')}</h2>
${
  view.approvals.length
    ? html`<ul aria-labelledby="approvals-h" data-field="approvals">${view.approvals.map(
        (a) => html`<li data-party="${a.party}"><form method="post" data-kp-post action="/account/approvals/revoke">
<input type="hidden" name="party" value="${a.party}"><strong>${a.name}</strong> <span class="muted">(${t('account.approvals.kind', { kind: a.kind === 'saml' ? 'saml' : 'app', scopes: a.scopes.join(', ') })})</span>
<button type="submit" class="secondary" data-action="revoke-approval" aria-label="${t('account.approvals.revoke_label', { action: t('account.revoke'), name: a.name })}">${t('account.revoke')}</button></form></li>`,
      )}</ul>`
    : html`<p class="muted">${t('account.approvals.none')}</p>`
}`;
}

function orgsSection(ui: PageUi, view: AccountView, again: AccountPageExtras) {
  const name = typeof again.kept?.['name'] === 'string' ? again.kept['name'] : '';
  const { t } = ui;
  return html`<h2 id="orgs-h">${t('account.orgs.heading')}</h2>
${view.orgs.length ? html`<ul aria-labelledby="orgs-h">${view.orgs.map((o) => html`<li><a href="/org/${encodeURIComponent(o.slug)}">${o.name}</a> · ${roleName(ui, o.role)}</li>`)}</ul>` : html`<p class="muted">${t('account.orgs.none')}</p>`}
${view.invites.map(
  (
    i,
  ) => html`<form method="post" data-kp-post action="/org/${encodeURIComponent(i.slug)}/members/accept" data-invite="${i.slug}">
<p>${raw(ui.rich('account.orgs.invited', { org: (chunks) => `<strong>${chunks}</strong>` }, { name: i.name, role: roleName(ui, i.role) }))} <button type="submit" data-action="accept-invite">${t('account.orgs.accept')}</button></p></form>`,
)}
<p id="form-status" role="status" aria-live="polite"></p>
<form method="post" data-kp-post data-then="org" action="/auth/orgs/create" aria-labelledby="org-create-h"><h3 id="org-create-h">${t('account.orgs.create_heading')}</h3>
<label for="org-name">${t('account.orgs.name')}</label> <input id="org-name" name="name" type="text" required maxlength="80" value="${name}">
<button type="submit" data-action="create-org">${t('account.orgs.create')}</button></form>`;
}
