import type { FastifyInstance } from 'fastify';
import { html, page } from '../../pages/layout.js';
import { requireAssurance, requireSession } from '../../plugins/session.js';
import { deleteOwnAccount } from '../../accounts/lifecycle.js';
import { renameAccount, setDisplayName, updatePreferences } from '../../accounts/profile.js';
import { revokeDevice, revokeSession, signOut } from '../../sessions/end-session.js';
import { clearSessionCookie } from '../../http/session-cookies.js';
import { wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { loadAccountView, type AccountView } from '../../accounts/view.js';
import { revokeApproval } from '../../consent/gate.js';

/** How a session's or device's browser is shown (lib/accounts/user-agent.ts). */
const deviceDescription = {
  label: { type: 'string', description: 'What a person reads, e.g. "Chrome 139 on macOS"' },
  browser: { description: 'e.g. "Chrome 139"; null when the User-Agent names none' },
  os: { description: 'e.g. "macOS"; null when the User-Agent names none' },
} as const;

const accountSchema = {
  type: 'object',
  properties: {
    ok: { const: true },
    identityId: { type: 'string' },
    username: { type: 'string' },
    aliases: { type: 'array', items: { type: 'string' } },
    displayName: { type: 'string' },
    preferences: { type: 'object', additionalProperties: { type: 'string' } },
    emails: {
      type: 'array',
      items: { type: 'object', properties: { email: { type: 'string' }, verified: { type: 'boolean' } } },
    },
    passkeys: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: { credId: { type: 'string' }, label: { type: 'string' } },
      },
    },
    totp: { enum: ['off', 'pending', 'active'] },
    sessions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: {
          identifier: { type: 'string' },
          deviceId: { type: 'string' },
          assurance: { type: 'string' },
          current: { type: 'boolean' },
          thisDevice: { type: 'boolean', description: 'A session of the browser that asks' },
          ...deviceDescription,
        },
      },
    },
    devices: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: { deviceId: { type: 'string' }, current: { type: 'boolean' }, ...deviceDescription },
      },
    },
    orgs: {
      type: 'array',
      items: {
        type: 'object',
        properties: { slug: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' } },
      },
    },
    invites: {
      type: 'array',
      items: {
        type: 'object',
        properties: { slug: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' } },
      },
    },
  },
  additionalProperties: true,
} as const;

const session = [{ sessionCookie: [] }];
const receiptOnly = { 200: okObject({ receipt: { type: 'string' } }), ...errorResponses };

/** The account page and the account operations (docs/accounts.md#the-account). All need a session. */
export default async function accountRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', requireSession);

  app.get(
    '/account',
    {
      schema: {
        tags: ['accounts'],
        summary: 'The account: HTML page, or with format=json the profile (docs/accounts.md#the-account)',
        security: session,
        querystring: { type: 'object', properties: { format: { enum: ['json', 'html'] } } },
        response: { 200: accountSchema, ...errorResponses },
      },
    },
    async (request, reply) => {
      const current = request.kp.session!;
      const { view, extras } = await loadAccountView(app.kp, current.identityId, {
        sessionId: current.id,
        deviceId: current.deviceId,
      });
      if (wantsJson(request)) return { ok: true, ...view };
      reply.type('text/html; charset=utf-8');
      return page({
        title: 'Your account',
        nonce: request.kp.cspNonce,
        lang: view.preferences['lang'] ?? 'en',
        scripts: ['/assets/account.js', ...(extras.scripts ?? []), '/assets/forms.js'],
        body: accountPage(view, current.assurance, [
          ...(extras.sections ?? []),
          approvalsSection(view),
          orgsSection(view),
        ]),
      });
    },
  );

  app.get(
    '/account/export',
    {
      schema: {
        tags: ['accounts'],
        summary: 'A portable, secret-free JSON copy of the account',
        security: session,
        response: {
          200: okObject({
            format: { type: 'string' },
            exportedAt: { type: 'string' },
            account: { type: 'object', additionalProperties: true },
          }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const current = request.kp.session!;
      const { view } = await loadAccountView(app.kp, current.identityId, {
        sessionId: current.id,
        deviceId: current.deviceId,
      });
      const { sessions: _sessions, ...rest } = view;
      reply.header('content-disposition', 'attachment; filename="keyplane-account.json"');
      return {
        ok: true,
        format: 'keyplane-account-export/v1',
        exportedAt: new Date(app.kp.now()).toISOString(),
        account: { ...rest, sessions: view.sessions.map(({ identifier: _id, ...s }) => s) },
      };
    },
  );

  app.post(
    '/auth/profile',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Set the display name (up to 64 characters)',
        security: session,
        body: { type: 'object', required: ['displayName'], properties: { displayName: {} } },
        response: { 200: okObject({ displayName: { type: 'string' } }), ...errorResponses },
      },
    },
    async (request) => {
      const displayName = await setDisplayName(
        app.kp,
        request.kp.session!.identityId,
        (request.body as { displayName: unknown }).displayName,
      );
      return { ok: true, displayName };
    },
  );

  app.post(
    '/auth/account/rename',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Change the username; the old one stays an alias that still resolves',
        security: session,
        body: { type: 'object', required: ['newUsername'], properties: { newUsername: {} } },
        response: {
          200: okObject({
            username: { type: 'string' },
            aliases: { type: 'array', items: { type: 'string' } },
            receipt: { type: 'string' },
          }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      return {
        ok: true,
        ...(await renameAccount(
          app.kp,
          request.kp.session!.identityId,
          (request.body as { newUsername: unknown }).newUsername,
        )),
      };
    },
  );

  app.post(
    '/auth/preferences',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Merge preferences key by key (theme, lang, contrast, motion, text, email; null removes a key)',
        security: session,
        body: { type: 'object', required: ['preferences'], properties: { preferences: {} } },
        response: {
          200: okObject({ preferences: { type: 'object', additionalProperties: { type: 'string' } } }, ['preferences']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const preferences = await updatePreferences(
        app.kp,
        request.kp.session!.identityId,
        (request.body as { preferences: unknown }).preferences,
      );
      return { ok: true, preferences };
    },
  );

  app.post(
    '/auth/sessions/revoke',
    {
      schema: {
        tags: ['accounts'],
        summary: "Revoke one of the account's sessions (this one too: then it signs out)",
        security: session,
        body: { type: 'object', required: ['identifier'], properties: { identifier: { type: 'string' } } },
        response: receiptOnly,
      },
    },
    async (request, reply) => {
      const current = request.kp.session!;
      const { identifier } = request.body as { identifier: string };
      const { receipt } = await revokeSession(
        app.kp,
        { identityId: current.identityId, sessionId: current.id },
        identifier,
      );
      if (identifier === current.id) clearSessionCookie(app.kp, reply);
      return { ok: true, ...(receipt ? { receipt } : {}) };
    },
  );

  app.post(
    '/auth/devices/revoke',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Revoke every session of a device, then drop it from the device ledger',
        security: session,
        body: { type: 'object', required: ['deviceId'], properties: { deviceId: { type: 'string' } } },
        response: { 200: okObject({ sessions: { type: 'integer' }, receipt: { type: 'string' } }), ...errorResponses },
      },
    },
    async (request, reply) => {
      const current = request.kp.session!;
      const { deviceId } = request.body as { deviceId: string };
      const revoked = await revokeDevice(app.kp, { identityId: current.identityId, sessionId: current.id }, deviceId);
      if (deviceId === current.deviceId) clearSessionCookie(app.kp, reply);
      return { ok: true, ...revoked };
    },
  );

  app.post(
    '/account/approvals/revoke',
    {
      schema: {
        tags: ['accounts'],
        summary:
          'Forget the approval of an app or SAML service provider (`party`: its client id or provider id): the next sign-in there asks again',
        security: session,
        body: {
          type: 'object',
          required: ['party'],
          properties: { party: { type: 'string', minLength: 1, maxLength: 200 } },
        },
        response: receiptOnly,
      },
    },
    async (request) => {
      const { receipt } = await revokeApproval(
        app.kp,
        request.kp.session!.identityId,
        (request.body as { party: string }).party,
      );
      return { ok: true, ...(receipt ? { receipt } : {}) };
    },
  );

  app.post(
    '/account/delete',
    {
      onRequest: requireAssurance('sensitive'),
      schema: {
        tags: ['accounts'],
        summary:
          'Delete this account (sensitive session; `confirm` is the username): passkeys, TOTP, backup codes, e-mails, sessions, grants and personal clients go; receipts keep only the pseudonymous id',
        security: session,
        body: { type: 'object', required: ['confirm'], properties: { confirm: { type: 'string', maxLength: 200 } } },
        response: receiptOnly,
      },
    },
    async (request, reply) => {
      const { receipt } = await deleteOwnAccount(
        app.kp,
        request.kp.session!.identityId,
        (request.body as { confirm: string }).confirm,
      );
      clearSessionCookie(app.kp, reply);
      return { ok: true, ...(receipt ? { receipt } : {}) };
    },
  );

  app.post(
    '/auth/signout',
    {
      schema: {
        tags: ['accounts'],
        summary: 'Sign out: ends this session and clears its cookie',
        security: session,
        response: receiptOnly,
      },
    },
    async (request, reply) => {
      const current = request.kp.session!;
      const { receipt } = await signOut(app.kp, { identityId: current.identityId, sessionId: current.id });
      clearSessionCookie(app.kp, reply);
      return { ok: true, ...(receipt ? { receipt } : {}) };
    },
  );
}

function time(ms: number | null): string {
  return ms === null ? 'never' : new Date(ms).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

/** A time as a `<time>` element, so scripts and assistive technology get the exact instant. */
function when(ms: number) {
  return html`<time datetime="${new Date(ms).toISOString()}">${time(ms)}</time>`;
}

function accountPage(view: AccountView, assurance: string, sections: ReturnType<typeof html>[]) {
  const prefs = view.preferences;
  const select = (name: string, label: string, values: string[]) => html`<label for="pref-${name}">${label}</label>
<select id="pref-${name}" name="${name}"><option value="">(default)</option>${values.map((v) => html`<option value="${v}"${prefs[name] === v ? html` selected` : ''}>${v}</option>`)}</select>`;
  return html`<h1>Your account</h1>
<p>Signed in as <strong data-field="username">${view.username}</strong>${view.displayName ? html` (${view.displayName})` : ''}.
Session assurance: <strong data-field="assurance">${assurance}</strong>. ${view.founder ? html`<strong>Founder</strong> account.` : ''}</p>
${view.aliases.length ? html`<p class="muted">Previous usernames that still work: ${view.aliases.join(', ')}</p>` : ''}
<p id="status" role="status" aria-live="polite"></p>
<p><button type="button" data-action="signout">Sign out</button> <a href="/auth/step-up?return=/account">Confirm it is you (step up)</a> · <a href="/account/export" download>Export my data</a></p>

<h2 id="profile-h">Profile</h2>
<form data-form="profile" aria-labelledby="profile-h">
  <label for="display-name">Display name</label>
  <input id="display-name" name="displayName" maxlength="64" value="${view.displayName}">
  <button type="submit">Save name</button>
</form>
<form data-form="rename" aria-labelledby="profile-h">
  <label for="new-username">Username</label>
  <input id="new-username" name="newUsername" autocapitalize="none" spellcheck="false" value="${view.username}" aria-describedby="username-help">
  <p id="username-help" class="muted">3 to 32 letters, digits, dots, dashes or underscores. Your old name keeps working.</p>
  <button type="submit">Change username</button>
</form>

<h2 id="passkeys-h">Passkeys</h2>
<table aria-labelledby="passkeys-h"><thead><tr><th scope="col">Label</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead><tbody>
${view.passkeys.map(
  (
    p,
  ) => html`<tr data-cred-id="${p.credId}"><td>${p.label}</td><td>${time(p.createdAt)}</td><td>${time(p.lastUsedAt)}</td>
<td><button type="button" class="secondary" data-action="rename-passkey" data-cred-id="${p.credId}" aria-label="Rename ${p.label}">Rename</button>
<button type="button" class="secondary" data-action="remove-passkey" data-cred-id="${p.credId}" aria-label="Remove ${p.label}"${view.passkeys.length <= 1 ? html` disabled title="Your last passkey cannot be removed"` : ''}>Remove</button></td></tr>`,
)}
</tbody></table>
<button type="button" data-action="add-passkey">Add a passkey</button>

<h2 id="sessions-h">Sessions</h2>
<table aria-labelledby="sessions-h"><thead><tr><th scope="col">Browser</th><th scope="col">Signed in</th><th scope="col">Last active</th><th scope="col">Assurance</th><th scope="col">Actions</th></tr></thead><tbody>
${view.sessions.map(
  (
    s,
  ) => html`<tr data-session="${s.identifier}"><td><span data-field="device-label">${s.label}</span>${s.current ? html` <strong class="tag" data-field="this-session">this session</strong>` : s.thisDevice ? html` <strong class="tag" data-field="this-device">this device</strong>` : ''}</td><td>${when(s.createdAt)}</td><td>${when(s.lastSeenAt)}</td><td>${s.assurance}</td>
<td><button type="button" class="secondary" data-action="revoke-session" data-identifier="${s.identifier}" aria-label="${s.current ? 'Sign out' : 'Revoke'}: the session in ${s.label}">${s.current ? 'Sign out' : 'Revoke'}</button></td></tr>`,
)}
</tbody></table>

<h2 id="devices-h">Devices</h2>
<table aria-labelledby="devices-h"><thead><tr><th scope="col">Browser</th><th scope="col">First seen</th><th scope="col">Last seen</th><th scope="col">Actions</th></tr></thead><tbody>
${view.devices.map(
  (
    d,
  ) => html`<tr data-device="${d.deviceId}"><td><span data-field="device-label">${d.label}</span>${d.current ? html` <strong class="tag" data-field="this-device">this device</strong>` : ''}</td><td>${when(d.createdAt)}</td><td>${when(d.lastSeenAt)}</td>
<td><button type="button" class="secondary" data-action="revoke-device" data-device-id="${d.deviceId}" aria-label="Revoke device: ${d.label}${d.current ? ' (this device)' : ''}">Revoke device</button></td></tr>`,
)}
</tbody></table>

<h2 id="security-h">Two-step and e-mail</h2>
<p>Authenticator app (TOTP): <strong data-field="totp">${view.totp}</strong></p>
<p id="emails-h">E-mail addresses${view.emails.length ? '' : html`: <span data-field="no-emails">none yet</span>`}</p>
<ul id="email-list" aria-labelledby="emails-h">${view.emails.map((e) => html`<li data-email="${e.email}">${e.email} <span class="muted">${e.verified ? '(verified)' : '(waiting for confirmation: open the link we mailed)'}</span></li>`)}</ul>
${sections}

<h2 id="prefs-h">Preferences</h2>
<form data-form="preferences" aria-labelledby="prefs-h">
${select('theme', 'Theme', ['system', 'light', 'dark'])}
${select('contrast', 'Contrast', ['normal', 'more', 'less'])}
${select('motion', 'Motion', ['full', 'reduce'])}
${select('text', 'Text size', ['normal', 'large', 'larger'])}
${select('email', 'E-mail from us', ['all', 'security', 'none'])}
<label for="pref-lang">Language</label>
<input id="pref-lang" name="lang" value="${prefs['lang'] ?? ''}" placeholder="en" autocapitalize="none" spellcheck="false">
<button type="submit">Save preferences</button>
</form>

<h2 id="delete-h">Delete my account</h2>
<form data-form="delete-account" aria-labelledby="delete-h" aria-describedby="delete-help">
<p id="delete-help">This deletes your passkeys, authenticator app, backup codes, e-mail addresses, sessions, the sign-ins you gave apps and the apps you registered. It cannot be undone. Receipts of past events stay, naming only your account id, never your name.${assurance === 'sensitive' ? '' : html` First <a href="/auth/step-up?return=/account">confirm it is you</a>.`}</p>
<label for="delete-confirm">To confirm, type your username: <strong>${view.username}</strong></label>
<input id="delete-confirm" name="confirm" required autocomplete="off" autocapitalize="none" spellcheck="false">
<button type="submit" class="danger" data-action="delete-account">Delete my account</button>
</form>`;
}

function approvalsSection(view: AccountView) {
  return html`<h2 id="approvals-h">Apps you approved</h2>
${
  view.approvals.length
    ? html`<ul aria-labelledby="approvals-h" data-field="approvals">${view.approvals.map(
        (a) => html`<li data-party="${a.party}"><form method="post" data-kp-post action="/account/approvals/revoke">
<input type="hidden" name="party" value="${a.party}"><strong>${a.name}</strong> <span class="muted">(${a.kind === 'saml' ? 'SAML service provider' : 'app'}: ${a.scopes.join(', ')})</span>
<button type="submit" class="secondary" data-action="revoke-approval" aria-label="Revoke ${a.name}">Revoke</button></form></li>`,
      )}</ul>`
    : html`<p class="muted">You have approved no app yet. Apps the operator runs itself never ask.</p>`
}`;
}

function orgsSection(view: AccountView) {
  return html`<h2 id="orgs-h">Organizations</h2>
${view.orgs.length ? html`<ul aria-labelledby="orgs-h">${view.orgs.map((o) => html`<li><a href="/org/${encodeURIComponent(o.slug)}">${o.name}</a> · ${o.role}</li>`)}</ul>` : html`<p class="muted">You belong to no organization yet.</p>`}
${view.invites.map(
  (
    i,
  ) => html`<form method="post" data-kp-post action="/org/${encodeURIComponent(i.slug)}/members/accept" data-invite="${i.slug}">
<p>You are invited to <strong>${i.name}</strong> as ${i.role}. <button type="submit" data-action="accept-invite">Accept</button></p></form>`,
)}
<p id="form-status" role="status" aria-live="polite"></p>
<form method="post" data-kp-post data-then="org" action="/auth/orgs/create" aria-labelledby="org-create-h"><h3 id="org-create-h">Create an organization</h3>
<label for="org-name">Name</label> <input id="org-name" name="name" type="text" required maxlength="80">
<button type="submit" data-action="create-org">Create</button></form>`;
}
