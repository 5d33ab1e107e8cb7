import type { FastifyInstance } from 'fastify';
import { html, page } from '../../pages/layout.js';

/** The sign-in and sign-up page. */
export default async function authPageRoutes(app: FastifyInstance): Promise<void> {
  app.get('/auth', {
    schema: { tags: ['accounts'], summary: 'HTML sign-in and sign-up page', produces: ['text/html'] },
  }, async (request, reply) => {
    reply.type('text/html; charset=utf-8');
    return page({
      title: 'Sign in',
      nonce: request.kp.cspNonce,
      body: html`<h1>Sign in to Keyplane</h1>
<form id="auth-form" novalidate>
  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username webauthn" autocapitalize="none" spellcheck="false" aria-describedby="username-help">
  <p id="username-help" class="muted">Leave it empty to choose a passkey saved on this device.</p>
  <button type="button" data-action="signin">Sign in with a passkey</button>
  <button type="button" class="secondary" data-action="signup">Create an account</button>
  <p id="status" role="status" aria-live="polite"></p>
</form>`,
    });
  });
}
