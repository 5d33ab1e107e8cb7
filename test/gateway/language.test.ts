import t from 'tap';
import { request } from 'undici';
import { signInRedirect, startTestGateway } from './helpers.js';

/** The gateway's language (docs/i18n.md): switcher cookie, Accept-Language, configured default. */

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers });
  return {
    status: res.statusCode,
    headers: res.headers,
    body: await res.body.text(),
    location: res.headers['location'] as string | undefined,
  };
}

t.test('the sign-out page follows Accept-Language, then the configured default', async (t) => {
  const gw = await startTestGateway(t, {
    policy: { mode: 'enforce', routes: [{ path: '/' }] },
    overrides: { defaultLocale: 'ja' },
  });
  const cookie = await gw.sessionCookie();
  const french = await get(`${gw.url}/_gate/signout?rd=/x`, { cookie, 'accept-language': 'fr-CA,en;q=0.5' });
  t.equal(french.status, 200);
  t.match(french.body, '<html lang="fr" dir="ltr">');
  t.match(french.body, '<h1>Se déconnecter ?</h1>');
  t.equal(french.headers['content-language'], 'fr');
  t.match(
    french.body,
    `<a href="/_gate/lang?lang=es&amp;rd=%2F_gate%2Fsignout%3Frd%3D%252Fx" hreflang="es" lang="es">`,
  );
  const fallback = await get(`${gw.url}/_gate/signout?rd=/x`, { cookie, 'accept-language': 'ko' });
  t.match(fallback.body, '<html lang="ja" dir="ltr">');
  t.match(fallback.body, 'サインアウトしますか？');
});

t.test('/_gate/lang keeps the choice in kp_lang and returns only to a path on the gateway', async (t) => {
  const gw = await startTestGateway(t, { policy: { mode: 'enforce', routes: [{ path: '/' }] } });
  const chosen = await get(`${gw.url}/_gate/lang?lang=ar&rd=%2F_gate%2Fsignout%3Frd%3D%252Fx`);
  t.equal(chosen.status, 302);
  t.equal(chosen.location, `${gw.url}/_gate/signout?rd=%2Fx`);
  t.match(String(chosen.headers['set-cookie']), /^kp_lang=ar; Path=\/; HttpOnly; SameSite=Lax; Max-Age=34560000$/);
  const cookie = await gw.sessionCookie();
  const arabic = await get(`${gw.url}/_gate/signout`, { cookie: `${cookie}; kp_lang=ar`, 'accept-language': 'de' });
  t.match(arabic.body, '<html lang="ar" dir="rtl">');
  const away = await get(`${gw.url}/_gate/lang?lang=de&rd=%2F%2Fevil.example%2F`);
  t.equal(away.location, `${gw.url}/`, 'another host is never a destination');
  const unknown = await get(`${gw.url}/_gate/lang?lang=xx&rd=/`);
  t.equal(unknown.status, 302);
  t.equal(unknown.headers['set-cookie'], undefined, 'an unsupported language sets nothing');
  const posted = await request(`${gw.url}/_gate/lang?lang=de`, { method: 'POST' });
  t.equal(posted.statusCode, 405);
  await posted.body.dump();
});

t.test('a language chosen at the gateway goes on to the control plane as ui_locales', async (t) => {
  const gw = await startTestGateway(t, { policy: { mode: 'enforce', routes: [{ path: '/' }] } });
  const plain = await request(`${gw.url}/_gate/signin?rd=/x`, { headers: { 'accept-language': 'de' } });
  await plain.body.dump();
  const unchosen = await signInRedirect(gw.running.gateway, plain);
  t.equal(
    unchosen?.authorize.searchParams.get('ui_locales'),
    null,
    'Accept-Language alone is left to the control plane',
  );
  const chosen = await request(`${gw.url}/_gate/signin?rd=/x`, { headers: { cookie: 'kp_lang=pt-BR' } });
  await chosen.body.dump();
  const withLocale = await signInRedirect(gw.running.gateway, chosen);
  t.equal(withLocale?.authorize.searchParams.get('ui_locales'), 'pt-BR');
});
