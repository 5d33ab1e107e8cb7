import t from 'tap';
import { matchAcceptLanguage, matchLocale, matchLocaleList, negotiateLocale } from '#lib/i18n/negotiate-locale.js';
import { directionOf } from '#lib/i18n/locales.js';
import { translatorFor } from '#lib/i18n/translate.js';

t.test('matches a tag exactly, by its language, or to the one region of that language', async (t) => {
  t.equal(matchLocale('pt-BR'), 'pt-BR');
  t.equal(matchLocale('PT-br'), 'pt-BR');
  t.equal(matchLocale('de-AT'), 'de');
  t.equal(matchLocale('pt'), 'pt-BR');
  t.equal(matchLocale('pt-PT'), 'pt-BR');
  t.equal(matchLocale('ar-EG'), 'ar');
  t.equal(matchLocale('ko'), undefined);
  t.equal(matchLocale('<script>'), undefined);
});

t.test('orders Accept-Language by q-value, skipping q=0 and *', async (t) => {
  t.equal(matchAcceptLanguage('ko, fr;q=0.4, de;q=0.8'), 'de');
  t.equal(matchAcceptLanguage('de;q=0, *;q=0.9, ja;q=0.1'), 'ja');
  t.equal(matchAcceptLanguage('es-MX,es;q=0.9'), 'es');
  t.equal(matchAcceptLanguage('zh-CN'), undefined);
  t.equal(matchAcceptLanguage(undefined), undefined);
});

t.test('takes the first supported tag of a ui_locales list', async (t) => {
  t.equal(matchLocaleList('tlh  ja fr'), 'ja');
  t.equal(matchLocaleList('tlh'), undefined);
});

t.test('negotiates: request, cookie, preference, Accept-Language, default', async (t) => {
  const all = { requested: 'ar', cookie: 'fr', preference: 'de', acceptLanguage: 'es', fallback: 'ja' } as const;
  t.equal(negotiateLocale(all), 'ar');
  t.equal(negotiateLocale({ ...all, requested: undefined }), 'fr');
  t.equal(negotiateLocale({ ...all, requested: undefined, cookie: undefined }), 'de');
  t.equal(negotiateLocale({ ...all, requested: 'xx', cookie: undefined, preference: 'en-GB' }), 'en');
  t.equal(negotiateLocale({ acceptLanguage: 'es', fallback: 'ja' }), 'es');
  t.equal(negotiateLocale({ acceptLanguage: 'ko', fallback: 'ja' }), 'ja');
});

t.test('Arabic is written right to left, the others left to right', async (t) => {
  t.equal(directionOf('ar'), 'rtl');
  t.equal(directionOf('de'), 'ltr');
  t.equal(translatorFor('ar').dir, 'rtl');
});

t.test('a rich message escapes its values and renders its tags', async (t) => {
  const de = translatorFor('de');
  t.equal(
    de.rich('signin.signed_in_already', { account: (c) => `<a href="/account">${c}</a>` }),
    'Sie sind bereits angemeldet: <a href="/account">zu Ihrem Konto</a>, oder melden Sie sich unten bei einem anderen an.',
  );
  t.equal(translatorFor('de'), de, 'translators are cached per locale');
});

t.test('dates and times are written in the locale', async (t) => {
  const at = Date.UTC(2026, 10, 26, 23, 5);
  t.equal(translatorFor('en').date(at), 'Nov 26, 2026');
  t.equal(translatorFor('de').date(at), '26.11.2026');
  t.match(translatorFor('ja').dateTime(at), '2026/11/26');
});
