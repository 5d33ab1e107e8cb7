import type { FastifyInstance } from 'fastify';
import { validateReturnUrl } from '#lib/http/return-url.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { html, page, raw } from '../../pages/layout.js';
import { uiOf } from '../../pages/ui.js';
import { v1DeprecationHeaders, v1RequestCounter } from '../../v1/bridge.js';
import { connectionOffer } from '../federation/offer.js';

/** The sign-in and sign-up page. */
/** Notices the page shows after the account page sends a browser here (`?done=`); others are ignored. */
const DONE_NOTICES: Record<string, MessageKey | undefined> = {
  'signed-out': 'signin.done.signed_out',
  'account-deleted': 'signin.done.account_deleted',
};

export default async function authPageRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/auth',
    {
      schema: {
        tags: ['accounts'],
        summary: 'HTML sign-in and sign-up page',
        produces: ['text/html'],
        querystring: {
          type: 'object',
          properties: {
            setup: { type: 'string', description: 'Founder setup token from the first-run link' },
            done: {
              type: 'string',
              description: 'What just happened, shown as a notice: `signed-out` or `account-deleted`',
            },
            connection: {
              type: 'string',
              description:
                "A connection's id: the page offers a sign-in through it (docs/federation.md#asking-for-a-connection)",
            },
            return: {
              type: 'string',
              description:
                'A path on this server to open after sign-in (default /account); an absolute URL is a registered v1 return URL (deprecated v1 bridge, see /auth/v1/migrate)',
            },
          },
        },
      },
    },
    async (request, reply) => {
      const back = (request.query as { return?: string }).return;
      if (typeof back === 'string' && /^https?:\/\//i.test(back)) {
        // The deprecated v1 `return=` flow: its own route checks the URL and hands over the token.
        v1RequestCounter(app.kp.metrics).inc({ endpoint: '/auth', outcome: 'ok' });
        return reply
          .code(303)
          .headers(v1DeprecationHeaders(app.kp.config))
          .redirect(`/auth/v1/return?to=${encodeURIComponent(back)}`);
      }
      const founderSetup = typeof (request.query as { setup?: string }).setup === 'string';
      const doneKey = DONE_NOTICES[(request.query as { done?: string }).done ?? ''];
      // The one strict return-URL rule (docs/security.md "Open redirects"), applied here so the
      // page script never judges a URL itself: only a path on this origin reaches data-return.
      const returnTo = validateReturnUrl(back, app.kp.config.issuer) ?? '';
      const ui = uiOf(request);
      const { t } = ui;
      const offer = await connectionOffer(
        app.kp,
        request,
        reply,
        ui,
        (request.query as { connection?: string }).connection,
        returnTo,
      );
      reply.type('text/html; charset=utf-8');
      return page({
        title: t('signin.title'),
        nonce: request.kp.cspNonce,
        ui,
        scripts: ['/assets/auth.js'],
        body: html`<h1>${t('signin.heading')}</h1>
${doneKey ? html`<p class="notice" role="status" data-notice="${(request.query as { done: string }).done}">${t(doneKey)}</p>` : ''}
${request.kp.session ? html`<p>${raw(ui.rich('signin.signed_in_already', { account: (c) => `<a href="/account">${c}</a>` }))}</p>` : ''}
${offer}
${founderSetup ? html`<p>${raw(ui.rich('signin.first_run', { strong: (c) => `<strong>${c}</strong>` }))}</p>` : ''}
<form id="auth-form" data-return="${returnTo}" novalidate data-msg-unsupported="${t('signin.js.unsupported')}" data-msg-choose-username="${t('signin.js.choose_username')}" data-msg-creating="${t('signin.js.creating')}" data-msg-created="${t('signin.js.created')}" data-msg-waiting="${t('signin.js.waiting')}" data-msg-signed-in="${t('signin.js.signed_in')}">
  <label for="username">${t('signin.username')}</label>
  <input id="username" name="username" autocomplete="username webauthn" autocapitalize="none" spellcheck="false" aria-describedby="username-help">
  <p id="username-help" class="muted">${t('signin.username_help')}</p>
  ${
    founderSetup
      ? html`<button type="button" data-action="signup">${t('signin.founder_button')}</button>
  <button type="button" class="secondary" data-action="signin">${t('signin.passkey_button')}</button>`
      : html`<button type="button" data-action="signin">${t('signin.passkey_button')}</button>
  <button type="button" class="secondary" data-action="signup">${t('signin.signup_button')}</button>`
  }
  <p id="status" role="status" aria-live="polite"></p>
</form>
<p class="muted">${raw(ui.rich('signin.no_passkey', { magic: (c) => `<a href="/auth/magic/request">${c}</a>`, backup: (c) => `<a href="/auth/recovery">${c}</a>` }))}</p>`,
      });
    },
  );
}
