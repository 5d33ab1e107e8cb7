import type { FastifyRequest } from 'fastify';
import { html, page } from '../../pages/layout.js';
import { PAGE_REFUSAL, refusalPage } from '../../pages/refusal-page.js';
import { uiOf } from '../../pages/ui.js';
import type { ErrorPage } from '../../plugins/errors.js';
import type { ReplaceQuestion } from '../../federation/open-session.js';
import type { HeldLink } from '../../federation/link-connection.js';

/** A refusal of a sign-in through a connection: a page in the person's language that names the reason. */
export const federationRefusal: ErrorPage = (request, failure) => refusalPage(request, failure, PAGE_REFUSAL);

/** What "test this connection" received: the upstream's claims, shown to the owner who asked. */
export function testedPage(request: FastifyRequest, claims: Record<string, unknown>): string {
  const ui = uiOf(request);
  const rows = Object.entries(claims).map(
    ([name, value]) =>
      html`<tr><th scope="row"><code>${name}</code></th><td><code>${JSON.stringify(value)}</code></td></tr>`,
  );
  return page({
    title: ui.t('federation.tested.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('federation.tested.heading')}</h1>
<p role="status">${ui.t('federation.tested.explain')}</p>
<table id="tested-claims"><tbody>${rows}</tbody></table>`,
  });
}

/**
 * Before a sign-in through a connection replaces another account's session
 * (docs/federation.md#when-another-account-is-signed-in): a plain form, no script.
 */
export function replaceQuestionPage(request: FastifyRequest, question: ReplaceQuestion): string {
  const ui = uiOf(request);
  return page({
    title: ui.t('federation.confirm.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t('federation.confirm.heading')}</h1>
<p id="replace-question">${ui.t('federation.confirm.text', { current: question.current, next: question.next, connection: question.connectionName })}</p>
<form method="post" action="/federation/confirm" id="replace-form">
  <input type="hidden" name="confirm" value="${question.confirmId}">
  <button type="submit" name="decision" value="continue" data-action="continue-as">${ui.t('federation.confirm.continue', { next: question.next })}</button>
  <button type="submit" name="decision" value="cancel" class="secondary" data-action="stay">${ui.t('federation.confirm.cancel', { current: question.current })}</button>
</form>`,
  });
}

/** The upstream identity a "Connect" brought back, to confirm with a passkey of the account (docs/federation.md#linking-a-personal-account). */
export function linkPage(request: FastifyRequest, held: HeldLink): string {
  const ui = uiOf(request);
  const { upstream } = held;
  return page({
    title: ui.t('federation.link.title'),
    nonce: request.kp.cspNonce,
    ui,
    scripts: ['/assets/federation-link.js'],
    body: html`<h1>${ui.t('federation.link.heading', { connection: held.connectionName })}</h1>
<p>${ui.t('federation.link.explain', { connection: held.connectionName })}</p>
<dl id="link-identity">
${upstream.name === null ? '' : html`<dt>${ui.t('federation.link.name')}</dt><dd>${upstream.name}</dd>`}
${upstream.email === null ? '' : html`<dt>${ui.t('federation.link.email')}</dt><dd>${upstream.email}</dd>`}
<dt>${ui.t('federation.link.subject')}</dt><dd><code>${upstream.subject}</code></dd>
</dl>
<form id="link-form" data-link="${held.linkId}" novalidate data-msg-waiting="${ui.t('signin.js.waiting')}" data-msg-done="${ui.t('federation.link.done')}">
  <button type="submit" data-action="confirm-link">${ui.t('federation.link.confirm')}</button>
  <p id="status" role="status" aria-live="polite"></p>
</form>
<p><a href="/account">${ui.t('federation.link.cancel')}</a></p>`,
  });
}
