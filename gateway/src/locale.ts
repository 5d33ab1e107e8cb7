import type { IncomingMessage, ServerResponse } from 'node:http';
import { cookieName } from '#lib/gateway-protocol/session-cookie.js';
import { LOCALE_NAMES, LOCALES, type Locale } from '#lib/i18n/locales.js';
import { matchLocaleList, negotiateLocale } from '#lib/i18n/negotiate-locale.js';
import { type Translator, translatorFor } from '#lib/i18n/translate.js';
import { escapeHtml } from '#lib/html/escape-html.js';
import { validateReturnUrl } from '#lib/http/return-url.js';
import type { GatewayContext } from './context.js';
import { requestScope } from './request-scope.js';
import { redirect } from './respond.js';

/**
 * The language of the gateway's pages (docs/i18n.md). The gateway holds no account, so the
 * preference `lang` never reaches it: the `kp_lang` cookie of its own switcher, then
 * `Accept-Language`, then `defaultLocale` from its configuration.
 */

/** The switcher's choice lasts as long as a browser keeps a cookie, as at the control plane. */
const LANG_COOKIE_MAX_AGE = 400 * 24 * 3600;

export function langCookieName(secure: boolean): string {
  return cookieName('kp_lang', secure);
}

/** The language the person chose with the gateway's switcher, if any. */
export function chosenLocale(ctx: GatewayContext, req: IncomingMessage): Locale | undefined {
  return matchLocaleList(requestScope(req).cookies[langCookieName(ctx.secure)]);
}

/** The translator of this request's page: `kp_lang` cookie, `Accept-Language`, configured default. */
export function gatewayUi(ctx: GatewayContext, req: IncomingMessage): Translator {
  const acceptLanguage = req.headers['accept-language'];
  return translatorFor(
    negotiateLocale({
      cookie: requestScope(req).cookies[langCookieName(ctx.secure)],
      acceptLanguage: typeof acceptLanguage === 'string' ? acceptLanguage : undefined,
      fallback: ctx.config.defaultLocale,
    }),
  );
}

/** The switcher: one link per language to `/_gate/lang`, which remembers it and returns to `returnTo`. */
export function languageSwitcher(ui: Translator, returnTo: string): string {
  const links = LOCALES.map((locale) => {
    const href = `/_gate/lang?${new URLSearchParams({ lang: locale, rd: returnTo })}`;
    const current = locale === ui.locale ? ' aria-current="true"' : '';
    return `<li><a href="${escapeHtml(href)}" hreflang="${locale}" lang="${locale}"${current}>${escapeHtml(LOCALE_NAMES[locale])}</a></li>`;
  });
  return `<nav class="lang" aria-label="${escapeHtml(ui.t('layout.language'))}"><ul>${links.join('')}</ul></nav>`;
}

/**
 * `/_gate/lang?lang=<tag>&rd=<path>`: keeps the choice in `kp_lang` and returns to `rd` (held to
 * the return-URL rule). A language cookie is all it sets, so it needs no CSRF token.
 */
export function chooseLanguage(ctx: GatewayContext, res: ServerResponse, query: URLSearchParams): void {
  const locale = matchLocaleList(query.get('lang')?.slice(0, 64) ?? undefined);
  const returnTo = validateReturnUrl(query.get('rd') ?? '/', ctx.publicUrl) ?? '/';
  const cookies = locale
    ? [
        `${langCookieName(ctx.secure)}=${locale}; Path=/; HttpOnly; SameSite=Lax${ctx.secure ? '; Secure' : ''}; Max-Age=${LANG_COOKIE_MAX_AGE}`,
      ]
    : [];
  redirect(res, `${ctx.publicUrl}${returnTo}`, cookies);
}
