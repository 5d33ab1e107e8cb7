/** The language of a page: negotiated once per request (docs/i18n.md), then its translator. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Locale } from '#lib/i18n/locales.js';
import { matchLocaleList, negotiateLocale } from '#lib/i18n/negotiate-locale.js';
import { type Translator, translatorFor } from '#lib/i18n/translate.js';
import { preferredLanguage } from '../accounts/profile.js';
import type { ControlPlaneServices } from '../context.js';
import { wantsJson } from '../http/negotiate.js';
import { referrerPolicyOf, type ReferrerPolicy } from '../plugins/security-headers.js';
import { isHttpsIssuer } from '../sessions/cookies.js';

/** What a page renders with: the translator, and the request path the language switcher links from. */
export interface PageUi extends Translator {
  /** The URL (path and query) the switcher's links point to with `lang=` set. */
  url: string;
  /** The page's `<meta name="referrer">`: its route's policy (`config.sameOriginReferrer`). */
  referrer?: ReferrerPolicy;
}

/** The switcher's choice lasts as long as a browser keeps a cookie; one carried from `ui_locales`, one sign-in flow. */
const SWITCHER_COOKIE_MAX_AGE = 400 * 24 * 3600;
const UI_LOCALES_COOKIE_MAX_AGE = 3600;

export function langCookieName(kp: Pick<ControlPlaneServices, 'config'>): string {
  return isHttpsIssuer(kp) ? '__Host-kp_lang' : 'kp_lang';
}

function queryParam(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value.slice(0, 256) : undefined;
}

/** The authorization endpoint, whose `ui_locales` is read from the resolved request (`adoptUiLocales`). */
const AUTHORIZE_PATH = '/auth/authorize';

/**
 * `ui_locales` of the query, for every page but the authorization endpoint: there it may come from a
 * pushed request, a signed request object or a POST body, and its query alone may not count.
 */
function queryUiLocales(request: FastifyRequest): string | undefined {
  if (request.url.split('?')[0] === AUTHORIZE_PATH) return undefined;
  return queryParam(request, 'ui_locales');
}

function setLangCookie(
  kp: Pick<ControlPlaneServices, 'config'>,
  reply: FastifyReply,
  locale: Locale,
  maxAge: number,
): void {
  reply.setCookie(langCookieName(kp), locale, {
    httpOnly: true,
    sameSite: 'lax',
    secure: isHttpsIssuer(kp),
    path: '/',
    maxAge,
  });
}

/**
 * Keeps an explicit choice of language for the rest of the browser's visit: `?lang=` (the switcher)
 * on any GET, or `ui_locales` on an authorization request, whose sign-in, consent and step-up pages
 * follow on other URLs. Not httpOnly-sensitive, but httpOnly anyway: no script reads it.
 */
export function rememberRequestedLocale(
  kp: Pick<ControlPlaneServices, 'config'>,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  if (request.method !== 'GET') return;
  const chosen = matchLocaleList(queryParam(request, 'lang'));
  const carried = chosen ? undefined : matchLocaleList(queryUiLocales(request));
  const locale = chosen ?? carried;
  if (!locale) return;
  setLangCookie(kp, reply, locale, chosen ? SWITCHER_COOKIE_MAX_AGE : UI_LOCALES_COOKIE_MAX_AGE);
}

/**
 * The `ui_locales` of a resolved authorization request (its query, a pushed request, a signed
 * request object or a POST body: the resolved parameters are the one source) sets this request's
 * language and carries it, for one hour, to the sign-in, consent and step-up pages that follow.
 * The switcher's `?lang=` on the same request still wins.
 */
export function adoptUiLocales(
  kp: Pick<ControlPlaneServices, 'config'>,
  request: FastifyRequest,
  reply: FastifyReply,
  uiLocales: unknown,
): void {
  if (typeof uiLocales !== 'string' || matchLocaleList(queryParam(request, 'lang'))) return;
  const locale = matchLocaleList(uiLocales.slice(0, 256));
  if (!locale) return;
  request.kp.locale = locale;
  setLangCookie(kp, reply, locale, UI_LOCALES_COOKIE_MAX_AGE);
}

/**
 * The locale of this request (docs/i18n.md): `?lang`/`ui_locales`, the `kp_lang` cookie, the account
 * preference `lang`, Accept-Language, `i18n.defaultLocale`. The preference costs a read, made only
 * for requests that may render a page (not those that ask for JSON).
 */
export async function requestLocale(
  services: Pick<ControlPlaneServices, 'storage' | 'config'>,
  request: FastifyRequest,
): Promise<Locale> {
  const preference =
    request.kp.session && !wantsJson(request)
      ? await preferredLanguage(services, request.kp.session.identityId)
      : undefined;
  return negotiateLocale({
    requested: queryParam(request, 'lang') ?? queryUiLocales(request),
    cookie: request.cookies?.[langCookieName(services)],
    preference,
    acceptLanguage: request.headers['accept-language'],
    fallback: services.config.i18n.defaultLocale,
  });
}

/**
 * Query parameters that make a URL one-time: a mailed link's `token`, a pushed request's
 * `request_uri` (RFC 9126 §4). The switcher never links back to such a URL: opened again it would
 * be spent, and the person would read "link used" in the language they asked for.
 */
const ONE_TIME_PARAMS = ['token', 'request_uri'];
/** Where such a page's switcher goes when the page names no better place: the account (or sign-in). */
const SAFE_PAGE = '/account';

/** The URL the switcher links to when the page names none: this page, unless that is one-time. */
function switcherTarget(request: FastifyRequest): string {
  // A page answering a form post links the switcher to the path alone (the GET page of that form).
  if (request.method !== 'GET') return request.url.split('?')[0]!;
  const query = new URL(request.url, 'http://page.invalid').searchParams;
  return ONE_TIME_PARAMS.some((name) => query.has(name)) ? SAFE_PAGE : request.url;
}

/** The page's translator, in the locale the locale plugin chose for this request. */
export function uiOf(request: FastifyRequest, here?: string): PageUi {
  return {
    ...translatorFor(request.kp.locale ?? 'en'),
    url: here ?? switcherTarget(request),
    referrer: referrerPolicyOf(request.routeOptions.config),
  };
}

/** The locale a mail to this account is written in: its preference `lang`, else the configured default. */
export function mailLocale(preferences: Record<string, string> | undefined, fallback: Locale): Locale {
  return negotiateLocale({ preference: preferences?.['lang'], fallback });
}
