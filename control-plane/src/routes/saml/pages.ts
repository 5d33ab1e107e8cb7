import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { html, page, raw } from '../../pages/layout.js';
import { refusalPage } from '../../pages/refusal-page.js';
import { uiOf } from '../../pages/ui.js';
import { contentSecurityPolicy } from '../../plugins/security-headers.js';
import type { PostForm } from '../../saml/sso.js';

/**
 * A SAML page's translator. Its switcher links to the path alone: the query holds a one-time SAML
 * message (and whatever else was sent beside it), which a link must neither repeat nor echo.
 */
function samlUi(request: FastifyRequest) {
  return uiOf(request, request.url.split('?')[0]);
}

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
  const ui = samlUi(request);
  return reply.send(
    page({
      title: ui.t('returning.title'),
      nonce: request.kp.cspNonce,
      ui,
      scripts: [POST_SCRIPT],
      body: html`<h1>${ui.t('returning.heading')}</h1>
<form id="kp-saml-form" method="post" action="${form.acsUrl}">
<input type="hidden" name="SAMLResponse" value="${form.samlResponse}">
${form.relayState !== undefined ? html`<input type="hidden" name="RelayState" value="${form.relayState}">` : ''}
<p>${raw(ui.rich('saml.post.continue', { button: (inner) => `<button type="submit">${inner}</button>` }))}</p>
</form>`,
    }),
  );
}

/**
 * A refused SAML message (the routes' `config.errorPage`): nothing is posted to any SP (its ACS URL
 * cannot be trusted), the user reads why; an API caller gets the envelope from the errors plugin.
 */
export function samlRefusalPage(request: FastifyRequest, failure: KeyplaneError): string {
  return refusalPage(request, failure, {
    ui: samlUi(request),
    heading: 'saml.refused.heading',
    explain: 'saml.refused.explain',
  });
}

export function sendSignedOut(request: FastifyRequest, reply: FastifyReply, ended: boolean): FastifyReply {
  reply.code(200).type('text/html; charset=utf-8');
  const ui = samlUi(request);
  return reply.send(
    page({
      title: ui.t('signed_out.title'),
      nonce: request.kp.cspNonce,
      ui,
      body: html`<h1>${ended ? ui.t('signed_out.heading') : ui.t('saml.signed_out.received')}</h1>
<p role="status">${ended ? ui.t('saml.signed_out.ended') : ui.t('saml.signed_out.none')}</p>`,
    }),
  );
}
