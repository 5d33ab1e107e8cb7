import t from 'tap';
import { SignJWT, UnsecuredJWT, decodeJwt, decodeProtectedHeader, generateKeyPair, type CryptoKey } from 'jose';
import { TEST_ISSUER } from '../../helpers/build.js';
import { Browser, buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  RESOURCE,
  basicAuth,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  redirectParams,
  refresh,
  registerClient,
} from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'clients'] as const;

async function setup(t: Parameters<typeof buildSignedIn>[0]) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app);
  const { browser, identityId } = await built.signIn({ username: 'alice' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const tokens = (await exchangeCode(built.app, client, code, verifier)).json();
  return { ...built, client, browser, identityId, tokens, challenge, verifier };
}

t.test(
  'userinfo refuses forged tokens: alg none, HS256, an unknown kid, a foreign key, a tampered payload',
  async (t) => {
    const { app, tokens } = await setup(t);
    const claims = decodeJwt(tokens.access_token);
    const header = decodeProtectedHeader(tokens.access_token);
    const none = new UnsecuredJWT(claims).encode();
    const hs256 = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: header.kid! })
      .sign(new TextEncoder().encode('0123456789abcdef0123456789abcdef'));
    const { privateKey } = await generateKeyPair('ES256');
    const unknownKid = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'not-a-kid' })
      .sign(privateKey as CryptoKey);
    const foreignKey = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: header.kid! })
      .sign(privateKey as CryptoKey);
    const [h, , s] = tokens.access_token.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'usr_mallory' })).toString('base64url')}.${s}`;
    for (const [name, token] of Object.entries({
      none,
      hs256,
      unknownKid,
      foreignKey,
      tampered,
      idTokenAsAccessToken: tokens.id_token,
    })) {
      const res = await app.inject({
        method: 'GET',
        url: '/auth/userinfo',
        headers: { authorization: `Bearer ${token}` },
      });
      t.equal(res.statusCode, 401, name);
      t.match(res.json(), { ok: false, reason: 'invalid_token', error: 'invalid_token' }, name);
      t.match(res.headers['www-authenticate'], /^Bearer realm="keyplane", error="invalid_token"/, name);
    }
    const missing = await app.inject({ method: 'GET', url: '/auth/userinfo' });
    t.equal(missing.statusCode, 401);
    t.match(missing.headers['www-authenticate'], /^Bearer realm="keyplane", DPoP algs=/);
    const post = await app.inject({
      method: 'POST',
      url: '/auth/userinfo',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    t.equal(post.statusCode, 200, 'POST works too');
  },
);

t.test('userinfo: an expired token, and a token for another resource, are refused', async (t) => {
  let now = Date.now();
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN }, now: () => now });
  const client = await registerClient(built.app);
  const { browser } = await built.signIn({ username: 'alice' });
  const { verifier, challenge } = pkcePair();
  const api = (
    await exchangeCode(
      built.app,
      client,
      (await obtainCode(browser, goodRequest(client, challenge, { resource: RESOURCE }))).code,
      verifier,
    )
  ).json();
  const forApi = await built.app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${api.access_token}` },
  });
  t.equal(forApi.statusCode, 401, 'a token for the API is not a token for userinfo');
  const plain = (
    await exchangeCode(built.app, client, (await obtainCode(browser, goodRequest(client, challenge))).code, verifier)
  ).json();
  now += 601_000;
  const expired = await built.app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${plain.access_token}` },
  });
  t.equal(expired.statusCode, 401);
});

t.test('userinfo states email only with scope email, and email_verified exactly', async (t) => {
  const { app, client, browser, identityId, services, verifier, challenge } = await setup(t);
  const now = Date.now();
  const row = await services.storage.emails.add({
    emailId: 'eml_1',
    identityId,
    email: 'alice@example.com',
    createdAt: now,
    verifiedAt: null,
  });
  const withEmail = (
    await exchangeCode(app, client, (await obtainCode(browser, goodRequest(client, challenge))).code, verifier)
  ).json();
  const info = (
    await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: { authorization: `Bearer ${withEmail.access_token}` },
    })
  ).json();
  t.match(info, { sub: identityId, email: 'alice@example.com', email_verified: false });
  t.equal(decodeJwt(withEmail.id_token).email_verified, false);
  await services.storage.emails.markVerified(row.emailId, now);
  const verified = (
    await exchangeCode(app, client, (await obtainCode(browser, goodRequest(client, challenge))).code, verifier)
  ).json();
  t.equal(decodeJwt(verified.id_token).email_verified, true);
  const openidOnly = (
    await exchangeCode(
      app,
      client,
      (await obtainCode(browser, goodRequest(client, challenge, { scope: 'openid' }))).code,
      verifier,
    )
  ).json();
  const bare = (
    await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: { authorization: `Bearer ${openidOnly.access_token}` },
    })
  ).json();
  t.notOk('email' in bare);
  t.notOk('preferred_username' in bare);
  t.notOk('email' in decodeJwt(openidOnly.id_token));
});

t.test(
  'revocation (RFC 7009): a refresh token revokes its family; an access token itself; unknown tokens are 200',
  async (t) => {
    const { app, client, browser, verifier, challenge, tokens } = await setup(t);
    const revoke = (token: string, c = client) =>
      app.inject({ method: 'POST', url: '/auth/revoke', headers: { authorization: basicAuth(c) }, payload: { token } });

    const other = await registerClient(app, { client_name: 'Other' });
    const foreign = await revoke(tokens.refresh_token, other);
    t.equal(foreign.statusCode, 200, 'another client gets 200…');
    t.equal((await refresh(app, client, tokens.refresh_token)).statusCode, 200, '…and revokes nothing');

    const second = (
      await exchangeCode(app, client, (await obtainCode(browser, goodRequest(client, challenge))).code, verifier)
    ).json();
    const res = await revoke(second.refresh_token);
    t.equal(res.statusCode, 200);
    t.same(Object.keys(res.json()), ['receipt'], 'no envelope member beside the receipt');
    t.match(res.json(), { receipt: /^[0-9a-f]{64}$/ });
    t.equal((await refresh(app, client, second.refresh_token)).json().reason, 'invalid_grant');
    t.equal(
      (
        await app.inject({
          method: 'GET',
          url: '/auth/userinfo',
          headers: { authorization: `Bearer ${second.access_token}` },
        })
      ).statusCode,
      401,
    );

    const third = (
      await exchangeCode(app, client, (await obtainCode(browser, goodRequest(client, challenge))).code, verifier)
    ).json();
    t.equal((await revoke(third.access_token)).statusCode, 200);
    t.equal(
      (
        await app.inject({
          method: 'GET',
          url: '/auth/userinfo',
          headers: { authorization: `Bearer ${third.access_token}` },
        })
      ).statusCode,
      401,
      'the access token is revoked',
    );
    t.equal((await refresh(app, client, third.refresh_token)).statusCode, 200, 'its refresh token still works');

    t.equal((await revoke('not-a-token')).statusCode, 200);
    const unauth = await app.inject({
      method: 'POST',
      url: '/auth/revoke',
      payload: { token: 'x', client_id: client.client_id },
    });
    t.equal(unauth.statusCode, 401);
    t.match(unauth.json(), { reason: 'invalid_client', error: 'invalid_client' });
  },
);

t.test('introspection (RFC 7662) answers authenticated confidential clients about their own tokens', async (t) => {
  const { app, client, tokens } = await setup(t);
  const introspect = (token: string, c = client) =>
    app.inject({
      method: 'POST',
      url: '/auth/introspect',
      headers: { authorization: basicAuth(c) },
      payload: { token },
    });
  const active = await introspect(tokens.access_token);
  t.equal(active.statusCode, 200);
  t.match(active.json(), {
    active: true,
    client_id: client.client_id,
    token_type: 'Bearer',
    scope: 'openid email profile offline_access',
    iss: TEST_ISSUER,
  });
  t.match((await introspect(tokens.refresh_token)).json(), { active: true, token_type: 'refresh_token' });
  t.same((await introspect('garbage')).json(), { active: false }, 'RFC 7662 members only');
  const other = await registerClient(app, { client_name: 'Other', resources: [] });
  t.same((await introspect(tokens.access_token, other)).json(), { active: false }, "not another client's token");
  const pub = await registerClient(app, { token_endpoint_auth_method: 'none' });
  const refused = await app.inject({
    method: 'POST',
    url: '/auth/introspect',
    payload: { token: tokens.access_token, client_id: pub.client_id },
  });
  t.equal(refused.json().reason, 'unauthorized_client');
});

t.test('RP-initiated logout: id_token_hint ends the session and returns to the exact registered URI', async (t) => {
  const { client, browser, tokens, challenge } = await setup(t);
  const bad = await browser.get(
    `/auth/logout?id_token_hint=${tokens.id_token}&post_logout_redirect_uri=${encodeURIComponent('https://notes.example.com/x')}`,
  );
  t.equal(bad.statusCode, 400, 'an unregistered post_logout_redirect_uri is shown, not followed');
  t.notOk(bad.headers.location);
  const forged = await browser.get(`/auth/logout?id_token_hint=${tokens.access_token.slice(0, -4)}AAAA`);
  t.equal(forged.statusCode, 400);

  const res = await browser.get(
    `/auth/logout?id_token_hint=${tokens.id_token}&post_logout_redirect_uri=${encodeURIComponent('https://notes.example.com/')}&state=bye`,
  );
  t.equal(res.statusCode, 302);
  t.equal(res.headers.location, 'https://notes.example.com/?state=bye');
  const after = await browser.get(
    `/auth/authorize?${new URLSearchParams(goodRequest(client, challenge, { prompt: 'none' }) as Record<string, string>)}`,
  );
  t.equal(redirectParams(after).get('error'), 'login_required', 'the session is gone');
});

t.test('logout without a hint asks for confirmation with a same-origin form', async (t) => {
  const { browser, client, challenge } = await setup(t);
  const page = await browser.get('/auth/logout');
  t.equal(page.statusCode, 200);
  t.match(page.body, /<form method="post" action="\/auth\/logout" data-action="logout">/);
  const still = await browser.get(
    `/auth/authorize?${new URLSearchParams(goodRequest(client, challenge, { prompt: 'none' }) as Record<string, string>)}`,
  );
  t.ok(redirectParams(still).get('code'), 'a GET alone signs nobody out');
  const done = await browser.post('/auth/logout', {});
  t.equal(done.statusCode, 200);
  const after = await browser.get(
    `/auth/authorize?${new URLSearchParams(goodRequest(client, challenge, { prompt: 'none' }) as Record<string, string>)}`,
  );
  t.equal(redirectParams(after).get('error'), 'login_required');
});

t.test(
  'logout never redirects to a post_logout_redirect_uri that no id_token_hint proves: the signed-out page links to it',
  async (t) => {
    const { app, client } = await setup(t);
    // Anyone may register a client whose post-logout URI is their own site.
    const evil = await registerClient(app, {
      redirect_uris: ['https://evil.example/cb'],
      post_logout_redirect_uris: ['https://evil.example/'],
    });
    const anonymous = await app.inject({
      method: 'GET',
      url: `/auth/logout?client_id=${evil.client_id}&post_logout_redirect_uri=${encodeURIComponent('https://evil.example/')}`,
    });
    t.equal(anonymous.statusCode, 200, 'no session: the signed-out page');
    t.notOk(anonymous.headers.location, 'no redirect');
    t.match(anonymous.body, /<a href="https:\/\/evil\.example\/" data-action="return"/);
    const confirmed = await new Browser(app).post('/auth/logout', {
      client_id: client.client_id,
      post_logout_redirect_uri: 'https://notes.example.com/',
      state: 'x',
    });
    t.equal(confirmed.statusCode, 200, 'a bare client_id, even confirmed, is not proof');
    t.notOk(confirmed.headers.location);
    t.match(confirmed.body, /href="https:\/\/notes\.example\.com\/\?state=x"/);
  },
);

t.test('CORS for browser clients: registered redirect-URI origins only, no credentials', async (t) => {
  const { app, tokens } = await setup(t);
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/auth/token',
    headers: {
      origin: 'https://notes.example.com',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'dpop, content-type',
    },
  });
  t.equal(preflight.statusCode, 204);
  t.equal(preflight.headers['access-control-allow-origin'], 'https://notes.example.com');
  t.match(preflight.headers['access-control-allow-headers'], /DPoP/);
  t.notOk(preflight.headers['access-control-allow-credentials']);
  const stranger = await app.inject({
    method: 'OPTIONS',
    url: '/auth/token',
    headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' },
  });
  t.notOk(stranger.headers['access-control-allow-origin'], 'an unregistered origin gets no CORS grant');
  const info = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { origin: 'https://notes.example.com', authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(info.headers['access-control-allow-origin'], 'https://notes.example.com');
  t.match(info.headers['access-control-expose-headers'], /WWW-Authenticate, DPoP-Nonce/);
  const evil = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { origin: 'https://evil.example.com', authorization: `Bearer ${tokens.access_token}` },
  });
  t.notOk(evil.headers['access-control-allow-origin']);
});
