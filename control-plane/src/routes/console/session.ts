import type { FastifyInstance } from 'fastify';
import { errorResponses, okObject } from '../../http/schemas.js';
import { html, page } from '../../pages/layout.js';
import {
  beginConsoleCeremony,
  consoleCookieName,
  consoleCookieOptions,
  endConsoleSession,
  finishConsoleCeremony,
} from '../../console/console-session.js';
import { CredentialLimits } from '../../passkeys/ceremony.js';
import { type ConsoleKit, html200 } from './kit.js';

/** The console session's routes: a fresh passkey ceremony, its own cookie, and the way out. */
export function sessionSection(app: FastifyInstance, c: ConsoleKit): void {
  const { kp, ui, opened, post } = c;
  const limits = new CredentialLimits(kp);

  app.get(
    '/console/sign-in',
    { schema: { tags: ['console'], summary: "The console's passkey page", produces: ['text/html'] } },
    async (request, reply) => {
      const t = ui(request).t;
      reply.type(html200);
      return page({
        title: t('console.open.title'),
        nonce: request.kp.cspNonce,
        ui: ui(request),
        scripts: ['/assets/console.js'],
        body: html`<h1>${t('console.open.title')}</h1>
<p>${t('console.open.explain')}</p>
<form id="console-open" data-msg-waiting="${t('signin.js.waiting')}">
  <button type="submit" data-action="console-open">${t('console.open.button')}</button>
  <p id="status" role="status" aria-live="polite"></p>
</form>
<noscript><p>${t('console.open.noscript')}</p></noscript>`,
      });
    },
  );

  app.post(
    '/console/session/options',
    {
      schema: {
        tags: ['console'],
        summary: 'Begin the console ceremony: usernameless request options for this purpose only',
        response: {
          200: okObject({ options: { type: 'object', additionalProperties: true } }, ['options']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      await limits.perIp(request, 'console');
      return { ok: true, options: await beginConsoleCeremony(kp) };
    },
  );

  app.post(
    '/console/session/verify',
    {
      schema: {
        tags: ['console'],
        summary: 'Finish the console ceremony: an operator or auditor gets the console cookie (SameSite=Strict)',
        body: { type: 'object', required: ['response'], properties: { response: {} } },
        response: {
          200: okObject({ role: { type: 'string' }, receipt: { type: 'string' } }, ['role']),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      await limits.perIp(request, 'console');
      const done = await finishConsoleCeremony(kp, (request.body as { response: unknown }).response);
      reply.setCookie(consoleCookieName(kp), done.token, consoleCookieOptions(kp));
      return { ok: true, role: done.session.role, ...(done.receipt ? { receipt: done.receipt } : {}) };
    },
  );

  post('/console/signout', 'End the console session', async (request, reply) => {
    await endConsoleSession(kp, opened(request));
    reply.clearCookie(consoleCookieName(kp), consoleCookieOptions(kp));
    return reply.redirect('/account', 303);
  });
}
