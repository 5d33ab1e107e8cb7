import t from 'tap';
import { build } from '../../helpers/build.js';

t.test('the sign-in page follows Accept-Language, with English as the default', async (t) => {
  const { app } = await build(t, { areas: ['pages'] });
  const english = await app.inject({ url: '/auth' });
  t.match(english.body, '<html lang="en" dir="ltr">');
  t.match(english.body, 'Sign in to Keyplane');
  const german = await app.inject({ url: '/auth', headers: { 'accept-language': 'de-AT,de;q=0.9,en;q=0.5' } });
  t.match(german.body, '<html lang="de" dir="ltr">');
  t.match(german.body, 'Bei Keyplane anmelden');
  t.match(german.body, 'data-msg-waiting="Warten auf Ihren Passkey …"');
  const brazil = await app.inject({ url: '/auth', headers: { 'accept-language': 'pt' } });
  t.match(brazil.body, '<html lang="pt-BR" dir="ltr">');
});

t.test('ui_locales beats Accept-Language and is carried in a short-lived kp_lang cookie', async (t) => {
  const { app } = await build(t, { areas: ['pages'] });
  const res = await app.inject({ url: '/auth?ui_locales=xx%20ar', headers: { 'accept-language': 'de' } });
  t.match(res.body, '<html lang="ar" dir="rtl">');
  t.match(res.body, 'سجّل الدخول إلى Keyplane');
  const cookie = res.cookies.find((c) => c.name === 'kp_lang');
  t.equal(cookie?.value, 'ar');
  t.equal(cookie?.maxAge, 3600);
  const next = await app.inject({ url: '/auth', headers: { 'accept-language': 'de', cookie: 'kp_lang=ar' } });
  t.match(next.body, '<html lang="ar" dir="rtl">');
});

t.test('the switcher links to ?lang= and the choice is remembered for a long time', async (t) => {
  const { app } = await build(t, { areas: ['pages'] });
  const res = await app.inject({ url: '/auth?done=signed-out' });
  t.match(res.body, '<a href="/auth?done=signed-out&amp;lang=fr" hreflang="fr" lang="fr">Français</a>');
  t.match(res.body, 'aria-current="true">English</a>');
  const french = await app.inject({ url: '/auth?done=signed-out&lang=fr' });
  t.match(french.body, 'Vous êtes déconnecté.');
  const cookie = french.cookies.find((c) => c.name === 'kp_lang');
  t.equal(cookie?.value, 'fr');
  t.equal(cookie?.maxAge, 400 * 24 * 3600);
  t.equal(cookie?.httpOnly, true);
});

t.test('the configured default applies when nothing else names a supported language', async (t) => {
  const { app } = await build(t, { areas: ['pages'], config: { 'i18n.defaultLocale': 'ja' } });
  const res = await app.inject({ url: '/auth', headers: { 'accept-language': 'ko, zh;q=0.5' } });
  t.match(res.body, '<html lang="ja" dir="ltr">');
  t.match(res.body, 'Keyplane にサインイン');
});
