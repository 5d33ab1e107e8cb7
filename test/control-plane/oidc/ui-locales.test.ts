import t, { type Test } from 'tap';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { TEST_ISSUER } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN, authorizeUrl, basicAuth, goodRequest, pkcePair, registerClient } from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['discovery', 'oidc', 'clients', 'pages'] as const;

/**
 * `ui_locales` is read from the resolved authorization request (docs/oidc.md "Languages"): its
 * query, a pushed request, a signed request object or a POST body; discovery lists the languages.
 */

const { publicKey, privateKey } = await generateKeyPair('ES256');
const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'rp-1', alg: 'ES256', use: 'sig' };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function setup(t: Test) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app, { jwks: { keys: [publicJwk] } });
  const { browser } = await built.signIn({ username: 'ada' });
  return { ...built, client, browser };
}

function languageOf(body: string): string | undefined {
  return /<html lang="([^"]+)" dir="([^"]+)">/.exec(body)?.slice(1).join(' ');
}

t.test('discovery lists the seven languages in ui_locales_supported, and no claims_locales_supported', async (t) => {
  const { app } = await setup(t);
  const doc = (await app.inject({ url: '/.well-known/openid-configuration' })).json();
  t.same(doc.ui_locales_supported, ['en', 'de', 'fr', 'es', 'pt-BR', 'ja', 'ar']);
  t.notOk('claims_locales_supported' in doc);
});

t.test('ui_locales in the query of a GET picks the consent page language and is carried', async (t) => {
  const { client, browser } = await setup(t);
  const { challenge } = pkcePair();
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { ui_locales: 'xx ar' })), {
    'accept-language': 'de',
  });
  t.equal(res.statusCode, 200);
  t.equal(languageOf(res.body), 'ar rtl');
  t.equal(res.cookies.find((c) => c.name === 'kp_lang')?.value, 'ar');
  t.equal(res.cookies.find((c) => c.name === 'kp_lang')?.maxAge, 3600);
  // claims_locales is accepted and ignored.
  const also = await browser.get(
    authorizeUrl(goodRequest(client, challenge, { claims_locales: 'fr', ui_locales: 'ja' })),
  );
  t.equal(also.statusCode, 200);
  t.equal(languageOf(also.body), 'ja ltr');
});

t.test('ui_locales of a pushed authorization request is honoured at /auth/authorize?request_uri', async (t) => {
  const { app, client, browser } = await setup(t);
  const { challenge } = pkcePair();
  const pushed = await app.inject({
    method: 'POST',
    url: '/auth/par',
    headers: { ...FORM, authorization: basicAuth(client) },
    payload: new URLSearchParams(
      goodRequest(client, challenge, { ui_locales: 'ar' }) as Record<string, string>,
    ).toString(),
  });
  t.equal(pushed.statusCode, 201, pushed.body);
  const res = await browser.get(authorizeUrl({ client_id: client.client_id, request_uri: pushed.json().request_uri }), {
    'accept-language': 'de',
  });
  t.equal(res.statusCode, 200, res.body.slice(0, 300));
  t.equal(languageOf(res.body), 'ar rtl');
  t.equal(res.cookies.find((c) => c.name === 'kp_lang')?.value, 'ar');
});

t.test("ui_locales inside a signed request object wins over the query's", async (t) => {
  const { client, browser } = await setup(t);
  const { challenge } = pkcePair();
  const now = Math.floor(Date.now() / 1000);
  const inner = goodRequest(client, challenge, { ui_locales: 'de-AT' });
  const request = await new SignJWT(inner)
    .setProtectedHeader({ alg: 'ES256', kid: 'rp-1', typ: 'oauth-authz-req+jwt' })
    .setIssuer(client.client_id)
    .setAudience(TEST_ISSUER)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(privateKey as CryptoKey);
  const res = await browser.get(
    authorizeUrl({ client_id: client.client_id, response_type: 'code', scope: 'openid', ui_locales: 'fr', request }),
  );
  t.equal(res.statusCode, 200, res.body.slice(0, 300));
  t.equal(languageOf(res.body), 'de ltr');
  t.equal(res.cookies.find((c) => c.name === 'kp_lang')?.value, 'de');
});

t.test('ui_locales in a POST to /auth/authorize is honoured, and ?lang= of the switcher still wins', async (t) => {
  const { client, browser } = await setup(t);
  const { challenge } = pkcePair();
  const res = await browser.request(
    'POST',
    '/auth/authorize',
    new URLSearchParams(goodRequest(client, challenge, { ui_locales: 'ar' }) as Record<string, string>).toString(),
    FORM,
  );
  t.equal(res.statusCode, 200, res.body.slice(0, 300));
  t.equal(languageOf(res.body), 'ar rtl');
  t.equal(res.cookies.find((c) => c.name === 'kp_lang')?.value, 'ar');
  const switched = await browser.get(`${authorizeUrl(goodRequest(client, challenge, { ui_locales: 'ar' }))}&lang=fr`);
  t.equal(languageOf(switched.body), 'fr ltr');
});
