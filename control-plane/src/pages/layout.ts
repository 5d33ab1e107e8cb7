/** Server-rendered pages: no build step, no inline script without the request's nonce. */
import type { MessageKey } from '#lib/i18n/translate.js';
import { POLICY_REFUSALS, type PolicyRefusal } from '#lib/webauthn/judge-passkey-policy.js';
import { LOCALE_NAMES, LOCALES } from '#lib/i18n/locales.js';
import { escapeHtml } from '#lib/html/escape-html.js';
import type { PageUi } from './ui.js';
import { SCRIPT_REASONS } from './script-reasons.js';

export { escapeHtml };

/** Tagged template that escapes every interpolation except values made by `html` itself. */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

/** HTML already escaped elsewhere (a translator's `rich()` output). */
export function raw(value: string): SafeHtml {
  return new SafeHtml(value);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(value);
}

export const STYLES = `
:root { color-scheme: light dark; --fg: #17202a; --bg: #fbfbfd; --muted: #5b6670; --accent: #0b57d0; --line: #d8dde3; --bad: #b3261e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e8eaed; --bg: #14171a; --muted: #a3acb5; --accent: #8ab4f8; --line: #343a40; --bad: #f2b8b5; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 42rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; }
a { color: var(--accent); }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
input[type=text], input[type=email], input:not([type]), select, textarea { width: 100%; padding: .6rem .7rem; font: inherit; border: 1px solid var(--line); border-radius: .4rem; background: transparent; color: inherit; }
button { font: inherit; padding: .6rem 1.1rem; border-radius: .4rem; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; margin-block: .75rem 0; margin-inline: 0 .5rem; }
button.secondary { background: transparent; color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.muted { color: var(--muted); }
.error { color: var(--bad); font-weight: 600; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: start; padding: .4rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
code { font-size: .9em; }
.notice { border-inline-start: 4px solid var(--accent); padding: .5rem .75rem; background: color-mix(in srgb, var(--accent) 8%, transparent); }
button.danger { background: var(--bad); border-color: var(--bad); color: #fff; }
input[type=url] { width: 100%; padding: .6rem .7rem; font: inherit; border: 1px solid var(--line); border-radius: .4rem; background: transparent; color: inherit; }
.tag { display: inline-block; font-size: .8em; font-weight: 600; padding: 0 .45rem; border: 1px solid var(--accent); border-radius: 1rem; color: var(--accent); }
nav.lang { max-width: 42rem; margin: 0 auto; padding: 0 1.25rem 2rem; font-size: .9rem; }
nav.lang ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .25rem 1rem; }
@media (prefers-reduced-motion: reduce) { * { transition: none !important; animation: none !important; } }
`;

export interface PageOptions {
  title: string;
  nonce: string;
  body: SafeHtml;
  /** Module scripts; each is loaded with the request's nonce. */
  scripts?: string[];
  /** A page's own script lines, already translated (`lines` in the `kp-messages` block, docs/i18n.md). */
  scriptLines?: Record<string, string>;
  /** The page's language (docs/i18n.md): sets `lang` and `dir` and adds the language switcher. */
  ui?: PageUi;
  /** @deprecated a page without `ui` keeps English chrome; `lang` then only sets the attribute. */
  lang?: string;
}

/** The switcher: one link per language to this same URL with `?lang=`, which sets the `kp_lang` cookie. */
function languageSwitcher(ui: PageUi): string {
  const here = new URL(ui.url, 'http://page.invalid');
  const links = LOCALES.map((locale) => {
    here.searchParams.set('lang', locale);
    const current = locale === ui.locale ? ' aria-current="true"' : '';
    return `<li><a href="${escapeHtml(here.pathname + here.search)}" hreflang="${locale}" lang="${locale}"${current}>${escapeHtml(LOCALE_NAMES[locale])}</a></li>`;
  });
  return `<nav class="lang" aria-label="${escapeHtml(ui.t('layout.language'))}"><ul>${links.join('')}</ul></nav>`;
}

/** The sentence of each org passkey policy refusal (docs/passkeys.md#org-policy). */
const POLICY_REFUSAL_KEYS = {
  revoked: 'passkey_policy.why.revoked',
  compromised: 'passkey_policy.why.compromised',
  denied: 'passkey_policy.why.denied',
  not_allowed: 'passkey_policy.why.not_allowed',
  attestation_required: 'passkey_policy.why.attestation_required',
} as const satisfies Record<PolicyRefusal, MessageKey>;

/**
 * The messages the page's scripts show, already translated, in a JSON block the scripts read
 * (`/assets/common.js`): the scripts build no sentences. `<` is escaped so the block cannot end early.
 */
function scriptMessages(ui: PageUi, nonce: string, lines: Record<string, string> = {}): string {
  const reasons: Record<string, string> = {};
  for (const reason of SCRIPT_REASONS) {
    const text = ui.reason(reason);
    if (text !== undefined) reasons[reason] = text;
  }
  const messages = {
    locale: ui.locale,
    reasons,
    cancelled: ui.t('script.cancelled'),
    passkeyExists: ui.t('script.passkey_exists'),
    failed: ui.t('script.failed'),
    working: ui.t('script.working'),
    networkFailed: ui.t('script.network_failed'),
    // An org policy's refusal names the authenticator (docs/passkeys.md#org-policy): `{name}` is filled in by the script.
    authenticatorRefusals: Object.fromEntries(
      POLICY_REFUSALS.map((why) => [why, ui.t(POLICY_REFUSAL_KEYS[why], { name: '{name}' })]),
    ),
    lines,
  };
  const json = JSON.stringify(messages).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
  return `<script type="application/json" id="kp-messages" nonce="${escapeHtml(nonce)}">${json}</script>`;
}

export function page(options: PageOptions): string {
  return `<!doctype html>
<html lang="${escapeHtml(options.ui?.locale ?? options.lang ?? 'en')}" dir="${options.ui?.dir ?? 'ltr'}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="${options.ui?.referrer ?? 'no-referrer'}">
<title>${escapeHtml(options.title)} · Keyplane</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style nonce="${escapeHtml(options.nonce)}">${STYLES}</style>
</head>
<body>
<main id="main">
${options.body.value}
</main>
${options.ui ? languageSwitcher(options.ui) : ''}
${options.ui && options.scripts?.length ? scriptMessages(options.ui, options.nonce, options.scriptLines) : ''}
${(options.scripts ?? []).map((src) => `<script type="module" nonce="${escapeHtml(options.nonce)}" src="${escapeHtml(src)}"></script>`).join('\n')}
</body>
</html>`;
}

/**
 * A form's error on a server-rendered page (docs/accessibility.md#form-errors): `region` says it
 * in a `role="alert"` element, and `field()` ties a field to it (`aria-invalid`,
 * `aria-describedby`) and, for the first invalid field, moves focus there on load with
 * `autofocus` (no script). Without an error both keep a field's own hint and add nothing else.
 */
export interface FormErrorView {
  region: SafeHtml;
  field(options?: { first?: boolean; hint?: string }): SafeHtml;
}

export function formError(message: SafeHtml | string | undefined, id = 'form-error'): FormErrorView {
  if (message === undefined || message === '') {
    return {
      region: html``,
      field: (options = {}) => (options.hint ? html` aria-describedby="${options.hint}"` : html``),
    };
  }
  return {
    region: html`<p id="${id}" role="alert" class="error">${message}</p>\n`,
    field: (options = {}) =>
      html` aria-invalid="true" aria-describedby="${options.hint ? `${id} ${options.hint}` : id}"${options.first ? html` autofocus` : ''}`,
  };
}
