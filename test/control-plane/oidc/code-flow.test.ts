import t from 'tap';
import {
  SignJWT,
  decodeJwt,
  decodeProtectedHeader,
  exportJWK,
  generateKeyPair,
  jwtVerify,
  createLocalJWKSet,
} from 'jose';
import { TEST_ISSUER } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  REDIRECT,
  RESOURCE,
  authorizeUrl,
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
const areas = ['discovery', 'oidc', 'clients'] as const;

async function setup(t: Parameters<typeof buildSignedIn>[0]) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app);
  const { browser, identityId } = await built.signIn({ username: 'alice' });
  return { ...built, client, browser, identityId };
}

t.test('code flow: one-tap page, code, tokens, userinfo; a second request skips the page', async (t) => {
  const { app, client, browser, identityId } = await setup(t);
  const { verifier, challenge } = pkcePair();

  const page = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(page.statusCode, 200);
  t.match(page.body, /<form method="post" action="\/auth\/authorize" data-action="continue">/);
  t.match(page.headers['content-security-policy'], /form-action 'self' https:\/\/notes\.example\.com/);
  t.equal(
    page.headers['referrer-policy'],
    'same-origin',
    'so that the form POST carries our Origin (no-referrer makes it null)',
  );

  const { code, res } = await obtainCode(browser, goodRequest(client, challenge));
  t.equal(res.statusCode, 303);
  const params = redirectParams(res);
  t.equal(params.base, REDIRECT);
  t.equal(params.get('state'), 'st-123');
  t.equal(params.get('iss'), TEST_ISSUER);

  const token = await exchangeCode(app, client, code, verifier);
  t.equal(token.statusCode, 200);
  t.match(token.headers['cache-control'], /no-store/);
  const body = token.json();
  t.notOk('ok' in body, 'a token response has no envelope member');
  t.match(body, {
    token_type: 'Bearer',
    expires_in: 600,
    scope: 'openid email profile offline_access',
    refresh_token: /^[A-Za-z0-9_-]{43}$/,
    receipt: /^[0-9a-f]{64}$/,
  });

  const jwks = createLocalJWKSet((await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json());
  const id = await jwtVerify(body.id_token, jwks, { issuer: TEST_ISSUER, audience: client.client_id });
  t.equal(id.protectedHeader.alg, 'ES256');
  t.match(id.payload, {
    sub: identityId,
    nonce: 'n-456',
    acr: 'passkey',
    amr: ['pop', 'user'],
    svc: { assurance: 'passkey', principal: { type: 'human', id: identityId } },
    preferred_username: 'alice',
  });
  t.type(id.payload.auth_time, 'number');
  t.type(id.payload.sid, 'string');
  t.notOk('email_verified' in id.payload, 'no email on the account, so no email claims');

  t.equal(decodeProtectedHeader(body.access_token).typ, 'at+jwt');
  const access = decodeJwt(body.access_token);
  t.match(access, {
    aud: client.client_id,
    client_id: client.client_id,
    scope: 'openid email profile offline_access',
    sub: identityId,
  });
  t.notOk(access.cnf);

  const info = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${body.access_token}` },
  });
  t.equal(info.statusCode, 200, info.body);
  t.match(info.json(), { sub: identityId, preferred_username: 'alice' });

  // Approved once: the next request redirects at once.
  const again = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(again.statusCode, 302);
  t.ok(redirectParams(again).get('code'));
});

t.test('refresh rotates the token; a reused refresh token revokes the whole family', async (t) => {
  const { app, client, browser } = await setup(t);
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const first = (await exchangeCode(app, client, code, verifier)).json();

  const second = await refresh(app, client, first.refresh_token);
  t.equal(second.statusCode, 200, second.body);
  t.not(second.json().refresh_token, first.refresh_token, 'rotated');
  t.ok(second.json().id_token);

  const reuse = await refresh(app, client, first.refresh_token);
  t.equal(reuse.statusCode, 400);
  t.match(reuse.json(), {
    ok: false,
    reason: 'invalid_grant',
    error: 'invalid_grant',
    error_description: /family is revoked/,
  });

  const afterReuse = await refresh(app, client, second.json().refresh_token);
  t.equal(afterReuse.statusCode, 400, 'the newest token of the family is dead too');
  t.equal(afterReuse.json().reason, 'invalid_grant');

  const info = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${second.json().access_token}` },
  });
  t.equal(info.statusCode, 401, 'access tokens of the family are revoked');
  t.match(info.headers['www-authenticate'], /error="invalid_token"/);
});

t.test('no refresh token without offline_access; a refresh cannot widen the granted scope', async (t) => {
  const { app, client, browser } = await setup(t);
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge, { scope: 'openid email' }));
  const narrow = await exchangeCode(app, client, code, verifier);
  t.equal(narrow.statusCode, 200, narrow.body);
  t.equal(narrow.json().scope, 'openid email');
  t.notOk('refresh_token' in narrow.json(), 'spec OIDC rule 5: refresh tokens need offline_access');

  const again = pkcePair();
  const { code: full } = await obtainCode(
    browser,
    goodRequest(client, again.challenge, { scope: 'openid offline_access' }),
  );
  const granted = (await exchangeCode(app, client, full, again.verifier)).json();
  const wider = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: granted.refresh_token,
      scope: 'openid email offline_access',
    }).toString(),
  });
  t.equal(wider.statusCode, 400);
  t.match(wider.json(), { ok: false, reason: 'invalid_scope', error: 'invalid_scope' });
  const retry = await refresh(app, client, granted.refresh_token);
  t.equal(retry.statusCode, 200, 'a refused request does not use the token up (nor look like reuse)');
});

t.test('a replayed code is refused and revokes what it issued', async (t) => {
  const { app, client, browser } = await setup(t);
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const first = await exchangeCode(app, client, code, verifier);
  t.equal(first.statusCode, 200);
  const replay = await exchangeCode(app, client, code, verifier);
  t.equal(replay.statusCode, 400);
  t.match(replay.json(), { reason: 'invalid_grant', error: 'invalid_grant' });
  const info = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${first.json().access_token}` },
  });
  t.equal(info.statusCode, 401);
  const refreshed = await refresh(app, client, first.json().refresh_token);
  t.equal(refreshed.json().reason, 'invalid_grant');
});

t.test('a wrong verifier, another redirect URI or another client is refused', async (t) => {
  const { app, client, browser } = await setup(t);
  const other = await registerClient(app, { client_name: 'Other' });
  const { verifier, challenge } = pkcePair();

  const wrong = await exchangeCode(
    app,
    client,
    (await obtainCode(browser, goodRequest(client, challenge))).code,
    pkcePair().verifier,
  );
  t.match(wrong.json(), { reason: 'invalid_grant', error_description: /code_verifier/ });

  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const redirect = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client) },
    payload: {
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'https://staging.notes.example.com/callback',
      code_verifier: verifier,
    },
  });
  t.match(redirect.json(), { reason: 'invalid_grant', error_description: /redirect_uri/ });

  const { code: code2 } = await obtainCode(browser, goodRequest(client, challenge));
  const stolen = await exchangeCode(app, other, code2, verifier);
  t.match(stolen.json(), { reason: 'invalid_grant', error_description: /another client/ });

  const badSecret = await exchangeCode(app, { ...client, client_secret: 'nope' }, code2, verifier);
  t.equal(badSecret.statusCode, 401);
  t.match(badSecret.json(), { reason: 'invalid_client', error: 'invalid_client' });
  t.match(badSecret.headers['www-authenticate'], /^Basic/);
});

t.test('an expired code is refused', async (t) => {
  let now = Date.now();
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN }, now: () => now });
  const client = await registerClient(built.app);
  const { browser } = await built.signIn({ username: 'alice' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  now += 61_000;
  const res = await exchangeCode(built.app, client, code, verifier);
  t.match(res.json(), { reason: 'invalid_grant', error_description: /expired/ });
});

t.test('resource indicators: the registered resource becomes aud; others are invalid_target', async (t) => {
  const { app, client, browser } = await setup(t);
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge, { resource: RESOURCE }));
  const token = (await exchangeCode(app, client, code, verifier)).json();
  t.equal(decodeJwt(token.access_token).aud, RESOURCE);
  t.equal(decodeJwt(token.id_token).aud, client.client_id, 'the ID token audience stays the client');

  const bad = await browser.get(
    authorizeUrl(goodRequest(client, challenge, { resource: 'https://api.notes.example.com/' })),
  );
  t.equal(bad.statusCode, 302);
  t.equal(redirectParams(bad).get('error'), 'invalid_target');
  t.equal(redirectParams(bad).get('iss'), TEST_ISSUER);

  const { code: code2 } = await obtainCode(browser, goodRequest(client, challenge));
  const atToken = await exchangeCode(app, client, code2, verifier, {}, { resource: 'https://evil.example.com' });
  t.match(atToken.json(), { reason: 'invalid_target', error: 'invalid_target' });
});

t.test('public clients authenticate with none; confidential ones cannot', async (t) => {
  const { app, browser } = await setup(t);
  const pub = await registerClient(app, { token_endpoint_auth_method: 'none' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(pub, challenge));
  const res = await app.inject({
    method: 'POST',
    url: '/auth/token',
    payload: {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_id: pub.client_id,
    },
  });
  t.equal(res.statusCode, 200);

  const conf = await registerClient(app);
  const none = await app.inject({
    method: 'POST',
    url: '/auth/token',
    payload: {
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_id: conf.client_id,
    },
  });
  t.equal(none.statusCode, 401);
  t.equal(none.json().reason, 'invalid_client');
});

t.test('token endpoint refusals carry both the envelope and RFC 6749 fields', async (t) => {
  const { app, client } = await setup(t);
  const grant = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client) },
    payload: { grant_type: 'password', username: 'a', password: 'b' },
  });
  t.match(grant.json(), { ok: false, reason: 'unsupported_grant_type', error: 'unsupported_grant_type' });
  const bad = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client), 'content-type': 'application/json' },
    payload: '{',
  });
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { ok: false, reason: 'invalid_request', error: 'invalid_request' });
  const unknown = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client) },
    payload: {
      grant_type: 'authorization_code',
      code: 'nope',
      redirect_uri: REDIRECT,
      code_verifier: pkcePair().verifier,
    },
  });
  t.match(unknown.json(), { reason: 'invalid_grant', error: 'invalid_grant' });
});

t.test('private_key_jwt: a signed client assertion authenticates once', async (t) => {
  const { app, browser } = await setup(t);
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const client = await registerClient(app, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } });
  const assertion = (jti: string) =>
    new SignJWT({ jti })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(client.client_id)
      .setSubject(client.client_id)
      .setAudience(`${TEST_ISSUER}/auth/token`)
      .setIssuedAt()
      .setExpirationTime('2m')
      .sign(privateKey);
  const { verifier, challenge } = pkcePair();
  const form = async (code: string, jti: string) =>
    new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: await assertion(jti),
    }).toString();
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  const ok = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers,
    payload: await form((await obtainCode(browser, goodRequest(client, challenge))).code, 'a1'),
  });
  t.equal(ok.statusCode, 200);
  const replay = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers,
    payload: await form((await obtainCode(browser, goodRequest(client, challenge))).code, 'a1'),
  });
  t.equal(replay.statusCode, 401, 'the same assertion jti twice');
  t.equal(replay.json().reason, 'invalid_client');
  const { privateKey: otherKey } = await generateKeyPair('ES256');
  const forged = await new SignJWT({ jti: 'a2' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(client.client_id)
    .setSubject(client.client_id)
    .setAudience(`${TEST_ISSUER}/auth/token`)
    .setIssuedAt()
    .setExpirationTime('2m')
    .sign(otherKey);
  const bad = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers,
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: forged,
    }).toString(),
  });
  t.equal(bad.json().reason, 'invalid_client');
});

t.test('the token endpoint is rate limited per address', async (t) => {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN, 'limits.authPerIpPerMinute': 3 } });
  const client = await registerClient(built.app);
  const attempt = () =>
    built.app.inject({
      method: 'POST',
      url: '/auth/token',
      headers: { authorization: basicAuth(client) },
      payload: {
        grant_type: 'authorization_code',
        code: 'x',
        redirect_uri: REDIRECT,
        code_verifier: pkcePair().verifier,
      },
    });
  for (let i = 0; i < 3; i++) t.equal((await attempt()).statusCode, 400);
  const limited = await attempt();
  t.equal(limited.statusCode, 429);
  t.match(limited.json(), { ok: false, reason: 'rate_limited', error: 'slow_down' });
  t.ok(Number(limited.headers['retry-after']) >= 1);
});

t.test('a step-up shows as sensitive only while it lasts; a recovery sign-in stays recovery', async (t) => {
  let now = Date.parse('2026-11-22T12:00:00Z');
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN }, now: () => now });
  const client = await registerClient(built.app);
  const { browser } = await built.signIn({ username: 'alice', assurance: 'sensitive' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge, { acr_values: 'sensitive' }));
  const first = (await exchangeCode(built.app, client, code, verifier)).json();
  t.match(decodeJwt(first.id_token), { acr: 'sensitive', svc: { assurance: 'sensitive' } });
  now += 6 * 60_000;
  const later = (await refresh(built.app, client, first.refresh_token)).json();
  t.match(
    decodeJwt(later.id_token),
    { acr: 'passkey', svc: { assurance: 'passkey' } },
    'refreshed after the step-up window: passkey',
  );
  t.equal(decodeJwt(later.access_token).acr, 'passkey');

  const { browser: recovered } = await built.signIn({ username: 'bob', assurance: 'recovery' });
  const { code: code2 } = await obtainCode(recovered, goodRequest(client, challenge));
  const rec = (await exchangeCode(built.app, client, code2, verifier)).json();
  t.match(decodeJwt(rec.id_token), { acr: 'recovery', svc: { assurance: 'recovery' } });
  const stepUp = await recovered.get(
    `/auth/authorize?${new URLSearchParams(goodRequest(client, challenge, { acr_values: 'passkey', prompt: 'none' }) as Record<string, string>)}`,
  );
  t.equal(
    redirectParams(stepUp).get('error'),
    'interaction_required',
    'acr_values=passkey is not met by a recovery sign-in',
  );
});
