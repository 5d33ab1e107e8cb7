/** The operator console's pages (docs/console.md): server-rendered, usable without JavaScript. */
import type { ConsoleSessionView } from '../console/console-session.js';
import { formError, html, page, raw, type SafeHtml } from './layout.js';
import type { PageUi } from './ui.js';

export const CONSOLE_SECTIONS = [
  ['/console', 'console.nav.overview'],
  ['/console/accounts', 'console.nav.accounts'],
  ['/console/clients', 'console.nav.clients'],
  ['/console/gateways', 'console.nav.gateways'],
  ['/console/orgs', 'console.nav.orgs'],
  ['/console/agents', 'console.nav.agents'],
  ['/console/webhooks', 'console.nav.webhooks'],
  ['/console/streams', 'console.nav.streams'],
  ['/console/apis', 'console.nav.apis'],
  ['/console/receipts', 'console.nav.receipts'],
  ['/console/operators', 'console.nav.operators'],
] as const;

const relativeTimeFormats = new Map<string, Intl.RelativeTimeFormat>();

/** One formatter per language: making one costs more than a list page's SQL (bench:console). */
function relativeTimeFormat(locale: string): Intl.RelativeTimeFormat {
  let format = relativeTimeFormats.get(locale);
  if (!format) {
    format = new Intl.RelativeTimeFormat(locale, { numeric: 'always' });
    relativeTimeFormats.set(locale, format);
  }
  return format;
}

/** A time as `<time>` with its age in the page's language ("3 minutes ago"). */
export function age(ui: PageUi, at: number | null | undefined, now: number): SafeHtml {
  if (at === null || at === undefined) return html`<span class="muted">${ui.t('console.never')}</span>`;
  const seconds = Math.round((at - now) / 1000);
  const [value, unit]: [number, Intl.RelativeTimeFormatUnit] =
    Math.abs(seconds) < 90
      ? [seconds, 'second']
      : Math.abs(seconds) < 5400
        ? [Math.round(seconds / 60), 'minute']
        : Math.abs(seconds) < 172800
          ? [Math.round(seconds / 3600), 'hour']
          : [Math.round(seconds / 86400), 'day'];
  const words = relativeTimeFormat(ui.locale).format(value, unit);
  return html`<time datetime="${new Date(at).toISOString()}">${words}</time>`;
}

export interface ConsolePageInput {
  title: string;
  nonce: string;
  session: ConsoleSessionView;
  body: SafeHtml;
  scripts?: string[];
  scriptLines?: Record<string, string>;
}

/** The console's frame: its sections, who is signed in with which role, and the way out. */
export function consolePage(ui: PageUi, input: ConsolePageInput): string {
  const nav = html`<nav aria-label="${ui.t('console.nav.label')}"><ul>${CONSOLE_SECTIONS.map(
    ([href, key]) => html`<li><a href="${href}">${ui.t(key)}</a></li>`,
  )}</ul></nav>`;
  return page({
    title: `${input.title} · ${ui.t('console.title')}`,
    nonce: input.nonce,
    ui,
    ...(input.scripts ? { scripts: input.scripts } : {}),
    ...(input.scriptLines ? { scriptLines: input.scriptLines } : {}),
    body: html`${nav}
<h1>${input.title}</h1>
<p class="muted">${ui.t(input.session.role === 'operator' ? 'console.signed_in_operator' : 'console.signed_in_auditor')}</p>
${input.body}
<form method="post" action="/console/signout"><button type="submit" class="secondary">${ui.t('console.signout')}</button></form>`,
  });
}

/** A change's outcome above the page: what was done, and its receipt as a link to the receipt page. */
export function doneNotice(ui: PageUi, text: string, receipt?: string, extra?: SafeHtml): SafeHtml {
  return html`<div role="status" class="notice"><p>${text}${
    receipt
      ? html` ${ui.t('console.receipt')} <a href="/console/receipts?hash=${receipt}"><code>${receipt}</code></a>`
      : ''
  }</p>${extra ?? ''}</div>`;
}

/** A refusal beside the form it refused (role="alert"), the person's input kept by the caller. */
export function refusalNotice(message: SafeHtml | string): ReturnType<typeof formError> {
  return formError(message);
}

/** A one-button POST form; the button names what it does (and for whom, for screen readers). */
export function actionButton(action: string, label: string, options: { danger?: boolean; fields?: SafeHtml } = {}) {
  return html`<form method="post" action="${action}">${options.fields ?? ''}<button type="submit"${options.danger ? raw(' class="danger"') : ''}>${label}</button></form>`;
}

/** "Next page" for a list paged by cursor: keeps the query, replaces `after`. */
export function nextLink(ui: PageUi, path: string, query: Record<string, string>, next: string | null): SafeHtml {
  if (next === null) return html``;
  const params = new URLSearchParams({ ...query, after: next });
  return html`<p><a href="${path}?${params.toString()}" rel="next">${ui.t('console.next')}</a></p>`;
}
