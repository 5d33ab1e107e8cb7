import { readFileSync } from 'node:fs';
import { IntlMessageFormat } from 'intl-messageformat';
import { escapeHtml } from '../html/escape-html.js';
import { directionOf, type Locale, LOCALES, SOURCE_LOCALE } from './locales.js';

/** Every key of the English source catalog: the only keys `t()` accepts. */
export type MessageKey = keyof typeof import('./messages/en.json', { with: { type: 'json' } });

export type MessageValues = Record<string, string | number | Date>;

/** A rich message's tags (`<link>…</link>`): each gets its chunk, already HTML-escaped, and returns HTML. */
export type MessageTags = Record<string, (inner: string) => string>;

/** The catalogs as written: one flat JSON object per language, keys as in English. */
export const CATALOGS: Readonly<Record<Locale, Readonly<Record<string, string>>>> = Object.fromEntries(
  // Read, not imported: JSON modules need import attributes the test loader drops. `npm run build` copies them.
  LOCALES.map((locale) => [
    locale,
    JSON.parse(readFileSync(new URL(`./messages/${locale}.json`, import.meta.url), 'utf8')) as Record<string, string>,
  ]),
) as Record<Locale, Record<string, string>>;

/**
 * Keys built at run time from a closed set of values (an error `reason`): the only prefixes allowed
 * in a non-literal key. The completeness test counts every key under them as used.
 */
export const DYNAMIC_KEY_PREFIXES = ['reason.'] as const;

export interface Translator {
  locale: Locale;
  dir: 'ltr' | 'rtl';
  /** The message as plain text; the caller escapes it (the pages' `html` template does). */
  t(key: MessageKey, values?: MessageValues): string;
  /** The message as HTML: values and literal text escaped, tags rendered by `tags`. */
  rich(key: MessageKey, tags: MessageTags, values?: MessageValues): string;
  /** The message for an error reason (`reason.<reason>`), or undefined when none is written. */
  reason(reason: string): string | undefined;
  /** A date and time in this locale, UTC (the server does not know the person's time zone). */
  dateTime(ms: number): string;
  /** A date in this locale, UTC. */
  date(ms: number): string;
  /** Alternatives as this language lists them (`a, b or c`): `Intl.ListFormat`, type disjunction. */
  orList(items: readonly string[]): string;
  /** Names side by side as this language lists them (`a, b, c`): `Intl.ListFormat`, type unit. */
  nameList(items: readonly string[]): string;
}

const translators = new Map<Locale, Translator>();

/** The translator of a locale; compiled messages are cached per locale for the life of the process. */
export function translatorFor(locale: Locale): Translator {
  let translator = translators.get(locale);
  if (!translator) {
    translator = buildTranslator(locale);
    translators.set(locale, translator);
  }
  return translator;
}

function buildTranslator(locale: Locale): Translator {
  const compiled = new Map<string, IntlMessageFormat>();
  const compile = (key: string): IntlMessageFormat | undefined => {
    let format = compiled.get(key);
    if (!format) {
      // A key missing in a translation falls back to English; the completeness test keeps that from shipping.
      const own = CATALOGS[locale][key];
      const source = own ?? CATALOGS[SOURCE_LOCALE][key];
      if (source === undefined) return undefined;
      format = new IntlMessageFormat(source, own === undefined ? SOURCE_LOCALE : locale);
      compiled.set(key, format);
    }
    return format;
  };
  const dateTimeFormat = new Intl.DateTimeFormat(locale, {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone: 'UTC',
  });
  const dateFormat = new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeZone: 'UTC' });
  const orFormat = new Intl.ListFormat(locale, { type: 'disjunction' });
  const nameFormat = new Intl.ListFormat(locale, { type: 'unit', style: 'short' });
  const plain = (key: string, values?: MessageValues): string => {
    const format = compile(key);
    return format ? String(format.format(values)) : key;
  };
  return {
    locale,
    dir: directionOf(locale),
    t: plain,
    rich(key, tags, values) {
      const format = compile(key);
      if (!format) return escapeHtml(key);
      const escaped: Record<string, unknown> = {};
      for (const [name, value] of Object.entries(values ?? {}))
        escaped[name] = typeof value === 'string' ? escapeHtml(value) : value;
      for (const [name, render] of Object.entries(tags)) escaped[name] = (chunks: unknown[]) => render(chunks.join(''));
      const out = format.format(escaped as Record<string, string>);
      return Array.isArray(out) ? out.join('') : String(out);
    },
    reason(reason) {
      const key = `reason.${reason}`;
      return CATALOGS[SOURCE_LOCALE][key] === undefined ? undefined : plain(key);
    },
    dateTime: (ms) => dateTimeFormat.format(ms),
    date: (ms) => dateFormat.format(ms),
    orList: (items) => orFormat.format(items),
    nameList: (items) => nameFormat.format(items),
  };
}
