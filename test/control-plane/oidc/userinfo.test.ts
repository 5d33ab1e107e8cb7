import t, { type Test } from 'tap';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { TEST_ISSUER } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN, dpopKey, exchangeCode, goodRequest, obtainCode, pkcePair, registerClient } from '../../helpers/oidc.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['oidc', 'discovery', 'clients'] as const;

/** Userinfo: the access token in a POST body (RFC 6750 §2.2) and signed responses (OIDC Core §5.3.2). */

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function setup(t: Test, metadata: Record<string, unknown> = {}, dpop?: Awaited<ReturnType<typeof dpopKey>>) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const client = await registerClient(built.app, metadata);
  const { browser, identityId } = await built.signIn({ username: 'alice' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const headers: Record<string, string> = dpop ? { dpop: await dpop.proof({}) } : {};
  const tokens = (await exchangeCode(built.app, client, code, verifier, headers)).json();
  return { ...built, client, identityId, tokens };
}

t.test('userinfo takes the access token as access_token in a form POST body', async (t) => {
  const { app, tokens, identityId } = await setup(t);
  const res = await app.inject({
    method: 'POST',
    url: '/auth/userinfo',
    headers: FORM,
    payload: new URLSearchParams({ access_token: tokens.access_token }).toString(),
  });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { sub: identityId, preferred_username: 'alice' });
});

t.test('one method only: a token in the header and the body is invalid_request', async (t) => {
  const { app, tokens } = await setup(t);
  const both = await app.inject({
    method: 'POST',
    url: '/auth/userinfo',
    headers: { ...FORM, authorization: `Bearer ${tokens.access_token}` },
    payload: new URLSearchParams({ access_token: tokens.access_token }).toString(),
  });
  t.equal(both.statusCode, 400);
  t.match(both.json(), { reason: 'invalid_request', error: 'invalid_request' });
  t.match(both.headers['www-authenticate'], /error="invalid_request"/);
  const repeated = await app.inject({
    method: 'POST',
    url: '/auth/userinfo',
    headers: FORM,
    payload: `access_token=${tokens.access_token}&access_token=${tokens.access_token}`,
  });
  t.equal(repeated.statusCode, 400, 'a repeated access_token');
  const json = await app.inject({
    method: 'POST',
    url: '/auth/userinfo',
    payload: { access_token: tokens.access_token },
  });
  t.equal(json.statusCode, 401, 'only a form body carries a token (RFC 6750 §2.2)');
});

t.test('a DPoP-bound token in a POST body is refused: it is a Bearer method', async (t) => {
  const key = await dpopKey();
  const { app, tokens } = await setup(t, {}, key);
  t.equal(tokens.token_type, 'DPoP');
  const res = await app.inject({
    method: 'POST',
    url: '/auth/userinfo',
    headers: FORM,
    payload: new URLSearchParams({ access_token: tokens.access_token }).toString(),
  });
  t.equal(res.statusCode, 401);
  t.equal(res.json().reason, 'invalid_token');
});

t.test('a client registered with userinfo_signed_response_alg gets a signed JWT', async (t) => {
  const { app, tokens, client, identityId } = await setup(t, { userinfo_signed_response_alg: 'ES256' });
  const res = await app.inject({
    method: 'GET',
    url: '/auth/userinfo',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/jwt/);
  const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as JSONWebKeySet;
  const { payload } = await jwtVerify(res.body, createLocalJWKSet(jwks), {
    issuer: TEST_ISSUER,
    audience: client.client_id,
    algorithms: ['ES256'],
    currentDate: new Date(app.kp.now()),
  });
  t.match(payload, { sub: identityId, preferred_username: 'alice' });
  t.notOk('ok' in payload);
  t.equal(decodeProtectedHeader(res.body).typ, undefined, 'no typ: it cannot pass for an ID token');
  const hint = await app.inject({ method: 'GET', url: `/auth/logout?id_token_hint=${res.body}` });
  t.equal(hint.statusCode, 400, 'and is refused as an id_token_hint');
});
