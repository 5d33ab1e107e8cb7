import type { FastifyRequest } from 'fastify';
import { html, page } from '../../pages/layout.js';
import { PAGE_REFUSAL, refusalPage } from '../../pages/refusal-page.js';
import { uiOf } from '../../pages/ui.js';
import type { ErrorPage } from '../../plugins/errors.js';

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
