/**
 * The languages Keyplane's pages and mails are written in (docs/i18n.md). Adding one is adding its
 * tag here and `messages/<tag>.json`; the completeness test then checks every key and placeholder.
 */
export const LOCALES = ['en', 'de', 'fr', 'es', 'pt-BR', 'ja', 'ar'] as const;

export type Locale = (typeof LOCALES)[number];

/** English is the source language: every key is written there first. */
export const SOURCE_LOCALE: Locale = 'en';

/** What a language's own speakers call it, for the language switcher. */
export const LOCALE_NAMES: Record<Locale, string> = {
  en: 'English',
  de: 'Deutsch',
  fr: 'Français',
  es: 'Español',
  'pt-BR': 'Português (Brasil)',
  ja: '日本語',
  ar: 'العربية',
};

const RIGHT_TO_LEFT: ReadonlySet<Locale> = new Set<Locale>(['ar']);

/** The writing direction, for `<html dir>`. */
export function directionOf(locale: Locale): 'ltr' | 'rtl' {
  return RIGHT_TO_LEFT.has(locale) ? 'rtl' : 'ltr';
}

/** The supported locale spelled `tag` (case-insensitive), or undefined. */
export function supportedLocale(tag: string | undefined): Locale | undefined {
  if (!tag) return undefined;
  const lower = tag.toLowerCase();
  return LOCALES.find((l) => l.toLowerCase() === lower);
}
