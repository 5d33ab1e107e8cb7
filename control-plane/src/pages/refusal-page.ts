import type { FastifyRequest } from 'fastify';
import type { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { html, page, raw, type SafeHtml } from './layout.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { uiOf, type PageUi } from './ui.js';

/**
 * The words of a refusal on the control plane's own pages and forms (the account, an org, the
 * rollout page…), where the default words, about a sign-in request an app sent, do not fit.
 */
export const PAGE_REFUSAL = {
  title: 'page_refused.title',
  heading: 'page_refused.heading',
  explain: 'page_refused.explain',
} as const satisfies Record<string, MessageKey>;

/**
 * The page of a refusal on a route a person reaches in the browser (the errors plugin renders it
 * for routes with `config.errorPage`, and where a route's own page is not drawn): the request
 * cannot continue, and why. The English page names the exact fault; other languages show the
 * reason's own text, or where none is written the exact fault in English, marked `lang="en"`.
 */
export function refusalPage(
  request: FastifyRequest,
  failure: KeyplaneError,
  words: { ui?: PageUi; title?: MessageKey; heading?: MessageKey; explain?: MessageKey } = {},
): string {
  const ui = words.ui ?? uiOf(request);
  const reason = failure.reason;
  const translated = ui.locale === 'en' ? undefined : ui.reason(reason);
  const shown =
    ui.locale === 'en' || translated !== undefined
      ? (translated ?? failure.message)
      : html`<span lang="en">${failure.message}</span>`;
  return page({
    title: ui.t(words.title ?? 'refused.title'),
    nonce: request.kp.cspNonce,
    ui,
    body: html`<h1>${ui.t(words.heading ?? 'refused.heading')}</h1>
<p class="error" role="alert">${shown}</p>
<p class="muted">${ui.t(words.explain ?? 'refused.explain')}</p>
<p class="muted">${raw(ui.rich('refused.reason', { code: (c) => html`<code data-reason="${reason}">${raw(c)}</code>`.value }, { reason }))}</p>`,
  });
}

/**
 * A refusal above a form shown again (a route's own `config.errorPage`): the reason's text in the
 * page's language (in English the exact fault) and the reason itself in `<code data-reason>`.
 */
export function refusalNote(ui: PageUi, failure: KeyplaneError): SafeHtml {
  const text = ui.locale === 'en' ? failure.message : (ui.reason(failure.reason) ?? ui.t('form_error.other'));
  return html`${text} <span class="muted">(<code data-reason="${failure.reason}">${failure.reason}</code>)</span>`;
}
