import type { FastifyInstance } from 'fastify';
import { sameOriginReturn } from '#lib/magic/magic-link.js';
import { html, page } from '../../pages/layout.js';
import { uiOf } from '../../pages/ui.js';
import { requireSession } from '../../plugins/session.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { CredentialLimits } from '../../passkeys/ceremony.js';
import { presentedSession, setSessionCookies } from '../../http/session-cookies.js';
import { beginStepUp, completeStepUp } from '../../sessions/step-up.js';
import { stepUpAsksTotp } from '../../totp/step-up-gate.js';

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
      // The code field only for an account whose TOTP is on: others have no code to give.
      const asksCode = await stepUpAsksTotp(app.kp, request.kp.session!.identityId);
      reply.type('text/html; charset=utf-8');
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
