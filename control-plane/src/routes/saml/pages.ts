import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyplaneError } from '../../../../lib/errors/keyplane-error.js';
import { html, page } from '../../pages/layout.js';
import { contentSecurityPolicy } from '../../plugins/security-headers.js';
import type { PostForm } from '../../saml/sso.js';

/** Served at POST_SCRIPT: submits the SAML form (a nonce'd module script; no inline handler). */
export const POST_SCRIPT = '/saml/post.js';
export const POST_JS = `// saml-bindings §3.5: the HTTP-POST binding's form, submitted without the user's click.
const form = document.getElementById('kp-saml-form');
if (form) form.submit();
`;

/** The auto-submitting HTTP-POST form to the registered ACS URL (CSP form-action names its origin only). */
export function sendPostForm(request: FastifyRequest, reply: FastifyReply, form: PostForm): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  reply.header(
    'content-security-policy',
    contentSecurityPolicy(request.kp.cspNonce, { formAction: [new URL(form.acsUrl).origin] }),
  );
  return reply.send(
    page({
      title: 'Returning to the application',
      nonce: request.kp.cspNonce,
      scripts: [POST_SCRIPT],
      body: html`<h1>Returning to the application…</h1>
<form id="kp-saml-form" method="post" action="${form.acsUrl}">
<input type="hidden" name="SAMLResponse" value="${form.samlResponse}">
${form.relayState !== undefined ? html`<input type="hidden" name="RelayState" value="${form.relayState}">` : ''}
<p>If nothing happens, <button type="submit">continue</button>.</p>
</form>`,
    }),
  );
}

/**
 * A refused SAML message (the routes' `config.errorPage`): nothing is posted to any SP (its ACS URL
 * cannot be trusted), the user reads why; an API caller gets the envelope from the errors plugin.
 */
export function samlRefusalPage(request: FastifyRequest, failure: KeyplaneError): string {
  return page({
    title: 'Sign-in request refused',
    nonce: request.kp.cspNonce,
    body: html`<h1>This SAML request cannot continue</h1>
<p class="error" role="alert">${failure.message}</p>
<p class="muted">The application that sent you here is not set up correctly or the request was tampered with, so Keyplane sent nothing back to it. Close this page and tell the application's team.</p>
<p class="muted">Reason: <code data-reason="${failure.reason}">${failure.reason}</code></p>`,
  });
}

export function sendSignedOut(request: FastifyRequest, reply: FastifyReply, ended: boolean): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  return reply.send(
    page({
      title: 'Signed out',
      nonce: request.kp.cspNonce,
      body: html`<h1>${ended ? 'You are signed out' : 'Sign-out received'}</h1>
<p role="status">${ended ? 'The application asked Keyplane to end your session, and it has ended.' : 'There was no matching Keyplane session in this browser to end.'}</p>`,
    }),
  );
}
