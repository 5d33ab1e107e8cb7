import { LOCALES, type Locale, supportedLocale } from './locales.js';

/** Where a language can come from, most specific first (docs/i18n.md "How a language is chosen"). */
export interface LocaleSources {
  /** `?lang=` of the language switcher, or the OIDC `ui_locales` of this request or carried through its flow. */
  requested?: string | undefined;
  /** The `kp_lang` cookie the switcher or an authorization request's `ui_locales` set. */
  cookie?: string | undefined;
  /** The account preference `lang` of the signed-in person (or the mail's recipient). */
  preference?: string | undefined;
  /** The `Accept-Language` request header. */
  acceptLanguage?: string | undefined;
  /** `i18n.defaultLocale` from the configuration. */
  fallback: Locale;
}

/**
 * The best supported locale for one tag: exact (`pt-BR`), then its language (`de-AT` → `de`), then
 * the supported locale of that language (`pt` → `pt-BR`).
 */
export function matchLocale(tag: string): Locale | undefined {
  const trimmed = tag.trim();
  if (!/^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(trimmed)) return undefined;
  const exact = supportedLocale(trimmed);
  if (exact) return exact;
  const language = trimmed.split('-')[0]!.toLowerCase();
  return LOCALES.find((l) => l.toLowerCase() === language) ?? LOCALES.find((l) => l.split('-')[0] === language);
}

/**
 * The first supported locale of a space-separated preference list (OIDC Core §3.1.2.1 `ui_locales`,
 * RFC 5646 tags in order of preference).
 */
export function matchLocaleList(list: string | undefined): Locale | undefined {
  if (!list) return undefined;
  for (const tag of list.split(/\s+/)) {
    const match = tag ? matchLocale(tag) : undefined;
    if (match) return match;
  }
  return undefined;
}

/**
 * The first supported locale of an `Accept-Language` header (RFC 9110 §12.5.4): ranges ordered by
 * q-value, ties kept in header order, `q=0` excluded, `*` ignored.
 */
export function matchAcceptLanguage(header: string | undefined): Locale | undefined {
  if (!header) return undefined;
  const ranges = header
    .slice(0, 1024)
    .split(',')
    .map((part, index) => {
      const [range = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([01](\.\d{0,3})?)\s*$/i.exec(p)).find(Boolean);
      return { range: range.trim(), q: q ? Number(q[1]) : 1, index };
    })
    .filter((r) => r.range && r.range !== '*' && r.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { range } of ranges) {
    const match = matchLocale(range);
    if (match) return match;
  }
  return undefined;
}

/** Picks the language of a page or mail: the first source that names a supported locale wins. */
export function negotiateLocale(sources: LocaleSources): Locale {
  return (
    matchLocaleList(sources.requested) ??
    matchLocaleList(sources.cookie) ??
    matchLocaleList(sources.preference) ??
    matchAcceptLanguage(sources.acceptLanguage) ??
    sources.fallback
  );
}
