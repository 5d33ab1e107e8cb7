import t, { type Test } from 'tap';
import { SignJWT, decodeJwt, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { TEST_ISSUER, manualClock } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  REDIRECT,
  authorizeUrl,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  redirectParams,
  registerClient,
} from '../../helpers/oidc.js';

/**
 * Registration metadata is honoured or refused by name (RFC 7591 §3.2.2), never accepted and
 * ignored; a client registered without `scope` can ask for email and profile.
 */

const admin = { authorization: `Bearer ${ADMIN}` };

async function register(app: Awaited<ReturnType<typeof buildSignedIn>>['app'], body: Record<string, unknown>) {
  return app.inject({
    method: 'POST',
    url: '/register',
    headers: admin,
    payload: { redirect_uris: [REDIRECT], ...body },
  });
}

async function setup(t: Test, config: Record<string, unknown> = {}, now?: () => number) {
  return buildSignedIn(t, { ...(now ? { now } : {}), config: { adminToken: ADMIN, ...config } });
}

t.test('members that are not offered are refused with invalid_client_metadata naming them', async (t) => {
  const { app } = await setup(t);
  const keys = { jwks: { keys: [await exportJWK((await generateKeyPair('ES256')).publicKey)] } };
  const refused: Array<[string, Record<string, unknown>]> = [
    ['id_token_signed_response_alg', { id_token_signed_response_alg: 'RS256' }],
    ['userinfo_signed_response_alg', { userinfo_signed_response_alg: 'RS256' }],
    ['subject_type', { subject_type: 'pairwise' }],
    ['request_object_signing_alg', { ...keys, request_object_signing_alg: 'none' }],
    ['token_endpoint_auth_signing_alg', { token_endpoint_auth_signing_alg: 'HS256' }],
    ['id_token_encrypted_response_alg', { id_token_encrypted_response_alg: 'RSA-OAEP' }],
    ['sector_identifier_uri', { sector_identifier_uri: 'https://rp.example.com/sector.json' }],
    ['frontchannel_logout_uri', { frontchannel_logout_uri: 'https://rp.example.com/logout' }],
    ['initiate_login_uri', { initiate_login_uri: 'https://rp.example.com/login' }],
    ['software_statement', { software_statement: 'eyJ.eyJ.sig' }],
    ['tls_client_certificate_bound_access_tokens', { tls_client_certificate_bound_access_tokens: true }],
  ];
  for (const [member, body] of refused) {
    const res = await register(app, body);
    t.equal(res.statusCode, 400, member);
    t.match(res.json(), { reason: 'invalid_client_metadata', error: 'invalid_client_metadata' }, member);
    t.match(res.json().error_description, member, `${member}: named`);
  }
  const honoured = await register(app, {
    id_token_signed_response_alg: 'ES256',
    subject_type: 'public',
    application_type: 'web',
    require_auth_time: true,
    contacts: ['ops@rp.example.com'],
  });
  t.equal(honoured.statusCode, 201);
  t.match(honoured.json(), {
    id_token_signed_response_alg: 'ES256',
    subject_type: 'public',
    application_type: 'web',
    require_auth_time: true,
    contacts: ['ops@rp.example.com'],
  });
  const update = await app.inject({
    method: 'PUT',
    url: `/register/${honoured.json().client_id}`,
    headers: { authorization: `Bearer ${honoured.json().registration_access_token}` },
    payload: {
      client_id: honoured.json().client_id,
      revision: 1,
      redirect_uris: [REDIRECT],
      id_token_signed_response_alg: 'RS256',
    },
  });
  t.equal(update.statusCode, 400, 'an update is held to the same rule');
  t.match(update.json().error_description, 'id_token_signed_response_alg');
});

t.test('registered without scope, a client gets the standard scopes: email and profile work', async (t) => {
  const { app, signIn } = await setup(t);
  const res = await register(app, { grant_types: ['authorization_code', 'refresh_token'] });
  t.equal(res.statusCode, 201);
  t.equal(res.json().scope, 'openid email profile offline_access');
  const client = res.json();
  const { browser } = await signIn({ username: 'alice' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(
    browser,
    goodRequest(client, challenge, { scope: 'openid email profile unknown:scope' }),
  );
  const tokens = await exchangeCode(app, client, code, verifier);
  t.equal(tokens.statusCode, 200);
  t.equal(tokens.json().scope, 'openid email profile', 'the unknown value was ignored, the rest granted');
  t.match(decodeJwt(tokens.json().id_token), { preferred_username: 'alice' });
});

t.test('an operator narrows the default scopes', async (t) => {
  const { app } = await setup(t, { 'oidc.defaultClientScopes': ['openid', 'email'] });
  t.equal((await register(app, {})).json().scope, 'openid email');
});

t.test('default_max_age and default_acr_values apply to requests that name none', async (t) => {
  const clock = manualClock();
  const { app, signIn } = await setup(t, {}, clock.now);
  const client = await registerClient(app, { default_max_age: 60 });
  const { browser } = await signIn({ username: 'alice' });
  const { challenge } = pkcePair();
  await obtainCode(browser, goodRequest(client, challenge));
  clock.advance(120_000);
  const silent = await browser.get(authorizeUrl(goodRequest(client, challenge, { prompt: 'none' })));
  t.equal(redirectParams(silent).get('error'), 'login_required', 'the sign-in is older than default_max_age');
  const explicit = await browser.get(authorizeUrl(goodRequest(client, challenge, { prompt: 'none', max_age: '600' })));
  t.ok(redirectParams(explicit).get('code'), "the request's own max_age wins");

  const stepUp = await registerClient(app, { default_acr_values: ['sensitive'] });
  const res = await browser.get(authorizeUrl(goodRequest(stepUp, challenge)));
  t.equal(res.statusCode, 303);
  t.equal(new URL(String(res.headers.location), TEST_ISSUER).pathname, '/auth/step-up');
});

t.test('a registered token_endpoint_auth_signing_alg is the only one accepted for client assertions', async (t) => {
  const { app } = await setup(t);
  const ec = await generateKeyPair('ES256');
  const ed = await generateKeyPair('EdDSA');
  const jwks = {
    keys: [
      { ...(await exportJWK(ec.publicKey)), kid: 'ec' },
      { ...(await exportJWK(ed.publicKey)), kid: 'ed' },
    ],
  };
  const client = await registerClient(app, {
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'ES256',
    jwks,
  });
  const assertion = (alg: string, kid: string, key: CryptoKey) =>
    new SignJWT({ jti: `${kid}-${Math.random()}` })
      .setProtectedHeader({ alg, kid })
      .setIssuer(client.client_id)
      .setSubject(client.client_id)
      .setAudience(`${TEST_ISSUER}/auth/token`)
      .setIssuedAt(Math.floor(app.kp.now() / 1000))
      .setExpirationTime(Math.floor(app.kp.now() / 1000) + 60)
      .sign(key);
  const revoke = async (jwt: string) =>
    app.inject({
      method: 'POST',
      url: '/auth/revoke',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        token: 'unknown',
        client_id: client.client_id,
        client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
        client_assertion: jwt,
      }).toString(),
    });
  t.equal((await revoke(await assertion('ES256', 'ec', ec.privateKey as CryptoKey))).statusCode, 200);
  const eddsa = await revoke(await assertion('EdDSA', 'ed', ed.privateKey as CryptoKey));
  t.equal(eddsa.statusCode, 401, 'EdDSA verifies with a registered key, but is not the registered algorithm');
  t.equal(eddsa.json().error, 'invalid_client');
});
