import type { FastifyInstance } from 'fastify';
import { validateReturnUrl } from '../../../../lib/util/return-url.js';
import { html, page } from '../../pages/layout.js';
import { v1DeprecationHeaders, v1RequestCounter } from '../../v1/bridge.js';

/** The sign-in and sign-up page. */
/** Notices the page shows after the account page sends a browser here (`?done=`); others are ignored. */
const DONE_NOTICES: Record<string, string | undefined> = {
  'signed-out': 'You are signed out. Sign in again below.',
  'account-deleted':
    'Your account was deleted: its passkeys, sessions and data are gone. Remove its passkey from your device too.',
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
      const done = DONE_NOTICES[(request.query as { done?: string }).done ?? ''];
      // The one strict return-URL rule (docs/security.md "Open redirects"), applied here so the
      // page script never judges a URL itself: only a path on this origin reaches data-return.
      const returnTo = validateReturnUrl(back, app.kp.config.issuer) ?? '';
      reply.type('text/html; charset=utf-8');
      return page({
        title: 'Sign in',
        nonce: request.kp.cspNonce,
        scripts: ['/assets/auth.js'],
        body: html`<h1>Sign in to Keyplane</h1>
${done ? html`<p class="notice" role="status" data-notice="${(request.query as { done: string }).done}">${done}</p>` : ''}
${request.kp.session ? html`<p>You are signed in already: <a href="/account">go to your account</a>, or sign in to another one below.</p>` : ''}
${founderSetup ? html`<p><strong>First run:</strong> choose the username of the founder (operator) account and create its passkey.</p>` : ''}
<form id="auth-form" data-return="${returnTo}" novalidate>
  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username webauthn" autocapitalize="none" spellcheck="false" aria-describedby="username-help">
  <p id="username-help" class="muted">Leave it empty to choose a passkey saved on this device.</p>
  <button type="button" data-action="signin">Sign in with a passkey</button>
  <button type="button" class="secondary" data-action="signup">Create an account</button>
  <p id="status" role="status" aria-live="polite"></p>
</form>
<p class="muted">No passkey at hand? <a href="/auth/magic/request">Email me a sign-in link</a> (verified addresses only) or <a href="/auth/recovery">use a backup code</a>.</p>`,
      });
    },
  );
}
