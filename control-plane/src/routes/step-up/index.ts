import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sameOriginReturn } from '#lib/magic/magic-link.js';
import { html, page } from '../../pages/layout.js';
import { uiOf } from '../../pages/ui.js';
import { requireSession } from '../../plugins/session.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { CredentialLimits } from '../../passkeys/ceremony.js';
import { presentedSession, setSessionCookies } from '../../http/session-cookies.js';
import { beginStepUp, completeStepUp } from '../../sessions/step-up.js';
import { stepUpAsksTotp } from '../../totp/step-up-gate.js';
import { startUpstreamStepUp, upstreamStepUpFor } from '../../federation/upstream-step-up.js';
import { bindingCookie } from '../federation/binding-cookie.js';
import { federationRefusal } from '../federation/pages.js';
import { contentSecurityPolicy } from '../../plugins/security-headers.js';

/**
 * Step-up: the signed-in user re-verifies a passkey of this account for the purpose (plus TOTP
 * when the account has it active); the session then gets a new token that counts as `sensitive`
 * for `lifetimes.stepUp` seconds (default 300), and its `auth_time` moves to now.
 */
export default async function stepUpRoutes(app: FastifyInstance): Promise<void> {
  const limits = new CredentialLimits(app.kp);
  app.addHook('onRequest', requireSession);

  app.get(
    '/auth/step-up',
    {
      schema: {
        tags: ['passkeys'],
        summary: 'HTML step-up page: confirm with a passkey (and TOTP when active) to reach `sensitive`',
        querystring: { type: 'object', properties: { return: { type: 'string' } } },
        produces: ['text/html'],
      },
    },
    async (request, reply) => {
      // A `return` target must be a path on this server (never `//host` or a scheme).
      const back =
        sameOriginReturn((request.query as { return?: string }).return ?? '', app.kp.config.issuer) ?? '/account';
      reply.type('text/html; charset=utf-8');
      const upstream = await upstreamStepUpFor(app.kp, request.kp.session!);
      if (upstream !== null) {
        // The form answers with a redirect to the upstream, which CSP form-action must allow.
        reply.header(
          'content-security-policy',
          contentSecurityPolicy(request.kp.cspNonce, { formAction: [upstream.origin] }),
        );
        return upstreamStepUpPage(request, upstream.name, back);
      }
      // The code field only for an account whose TOTP is on: others have no code to give.
      const asksCode = await stepUpAsksTotp(app.kp, request.kp.session!.identityId);
      const ui = uiOf(request);
      const minutes = Math.round(app.kp.config.lifetimes.stepUp / 60);
      return page({
        title: ui.t('stepup.title'),
        nonce: request.kp.cspNonce,
        ui,
        scripts: ['/assets/step-up.js'],
        body: html`<h1>${ui.t('stepup.title')}</h1>
<p>${ui.t('stepup.explain', { withCode: asksCode ? 'yes' : 'no', minutes })}</p>
<form id="step-up-form" data-return="${back}" novalidate data-msg-waiting="${ui.t('signin.js.waiting')}" data-msg-confirmed="${ui.t('stepup.js.confirmed')}">
${
  asksCode
    ? html`  <label for="totp-code">${ui.t('stepup.code')}</label>
  <input id="totp-code" name="totpCode" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>`
    : ''
}
  <button type="submit" data-action="step-up">${ui.t('stepup.button')}</button>
  <p id="status" role="status" aria-live="polite"></p>
</form>
<p><a href="${back}">${ui.t('stepup.cancel')}</a></p>`,
      });
    },
  );

  app.post(
    '/auth/step-up/upstream',
    {
      schema: {
        tags: ['passkeys'],
        summary:
          "Step up at the organization's identity provider (a managed account without a passkey): sign in there again (prompt=login, max_age=0), reaching at most passkey",
        security: [{ sessionCookie: [] }],
        consumes: ['application/x-www-form-urlencoded'],
        body: { type: 'object', properties: { return: { type: 'string', maxLength: 2048 } } },
        response: { 303: { description: "To the identity provider's sign-in", type: 'null' }, ...errorResponses },
      },
      config: { errorPage: federationRefusal },
    },
    async (request, reply) => {
      await limits.perIp(request, 'step-up');
      const back =
        sameOriginReturn((request.body as { return?: string }).return ?? '', app.kp.config.issuer) ?? '/account';
      const location = await startUpstreamStepUp(
        app.kp,
        request.kp.session!,
        bindingCookie.ensure(app.kp, request, reply),
        back,
      );
      return reply.redirect(location, 303);
    },
  );

  app.post(
    '/auth/step-up/options',
    {
      schema: {
        tags: ['passkeys'],
        summary: "Begin a step-up: request options limited to this account's passkeys",
        security: [{ sessionCookie: [] }],
        response: {
          200: okObject({ options: { type: 'object', additionalProperties: true } }, ['options']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      await limits.perIp(request, 'step-up');
      return { ok: true, options: await beginStepUp(app.kp, request.kp.session!) };
    },
  );

  app.post(
    '/auth/step-up/verify',
    {
      schema: {
        tags: ['passkeys'],
        summary: 'Finish a step-up: the session gets a new cookie, `sensitive` until `expiresAt`',
        security: [{ sessionCookie: [] }],
        body: { type: 'object', required: ['response'], properties: { response: {}, totpCode: { type: 'string' } } },
        response: {
          200: okObject(
            { assurance: { const: 'sensitive' }, expiresAt: { type: 'integer' }, receipt: { type: 'string' } },
            ['assurance', 'expiresAt'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      await limits.perIp(request, 'step-up');
      const { token, ...done } = await completeStepUp(
        app.kp,
        presentedSession(request)!,
        request.body as { response: unknown; totpCode?: string },
      );
      // A new session token: the one this request came with no longer finds the session.
      setSessionCookies(app.kp, reply, token);
      return { ok: true, assurance: 'sensitive' as const, ...done };
    },
  );
}

/**
 * The step-up page of an account an org manages that has no passkey (docs/federation.md#step-up-at-the-upstream):
 * it signs in again at its org's identity provider, a plain form.
 */
function upstreamStepUpPage(request: FastifyRequest, connection: string, back: string): string {
  const ui = uiOf(request);
  return page({
    title: ui.t('stepup.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('stepup.title')}</h1>
<p>${ui.t('stepup.upstream.explain', { connection })}</p>
<form method="post" action="/auth/step-up/upstream" id="step-up-upstream-form">
  <input type="hidden" name="return" value="${back}">
  <button type="submit" data-action="step-up-upstream">${ui.t('stepup.upstream.button', { connection })}</button>
</form>
<p><a href="${back}">${ui.t('stepup.cancel')}</a></p>`,
  });
}
