import type { FastifyInstance } from 'fastify';
import { accountPageAgain, accountPageHtml } from '../../pages/account-page.js';
import { langCookieName } from '../../pages/ui.js';
import { requireAssurance, requireSession } from '../../plugins/session.js';
import { deleteOwnAccount } from '../../accounts/lifecycle.js';
import { renameAccount, setDisplayName, updatePreferences } from '../../accounts/profile.js';
import { revokeDevice, revokeSession, signOut } from '../../sessions/end-session.js';
import { clearSessionCookie } from '../../http/session-cookies.js';
import { contentSecurityPolicy } from '../../plugins/security-headers.js';
import { upstreamLogoutOf, upstreamLogoutUrl } from '../../federation/upstream-logout.js';
import { wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { loadAccountView } from '../../accounts/view.js';
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
      items: {
        type: 'object',
        properties: { email: { type: 'string' }, verified: { type: 'boolean' }, claimedBy: { type: 'string' } },
      },
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
        amr: current.amr,
        authTime: current.authTime,
      });
      if (wantsJson(request)) return { ok: true, ...view };
      reply.type('text/html; charset=utf-8');
      // "Connect" answers with a redirect to the upstream, which CSP form-action must allow.
      if (extras.formAction?.length)
        reply.header(
          'content-security-policy',
          contentSecurityPolicy(request.kp.cspNonce, { formAction: extras.formAction }),
        );
      return accountPageHtml(request, view, extras);
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
    async (request, reply) => {
      const update = (request.body as { preferences: unknown }).preferences;
      const preferences = await updatePreferences(app.kp, request.kp.session!.identityId, update);
      // A language saved on the account outranks an earlier pick of the switcher in this browser (docs/i18n.md).
      if (update !== null && typeof update === 'object' && 'lang' in update)
        reply.clearCookie(langCookieName(app.kp), { path: '/' });
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
      // The approvals list's plain form: a refusal shows the account page again with the reason.
      config: { errorPage: accountPageAgain },
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
        summary:
          "Sign out: ends this session and clears its cookie; a federated session's answer names the upstream's logout to open next",
        security: session,
        response: {
          200: okObject({
            receipt: { type: 'string' },
            upstream_logout: {
              type: 'string',
              description:
                "The upstream's end_session_endpoint for a session signed in through a connection (docs/federation.md#signing-out)",
            },
          }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const current = request.kp.session!;
      const upstream = await upstreamLogoutOf(app.kp, current.id);
      const { receipt } = await signOut(app.kp, { identityId: current.identityId, sessionId: current.id });
      clearSessionCookie(app.kp, reply);
      const next = upstream && (await upstreamLogoutUrl(app.kp, upstream, { redirect: '/auth?done=signed-out' }));
      return { ok: true, ...(receipt ? { receipt } : {}), ...(next ? { upstream_logout: next } : {}) };
    },
  );
}
