import t, { type Test } from 'tap';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';
import { TEST_ISSUER } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import {
  ADMIN,
  REDIRECT,
  authorizeUrl,
  exchangeCode,
  obtainCode,
  pkcePair,
  redirectParams,
  registerClient,
} from '../../helpers/oidc.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['clients', 'oidc'] as const;

/**
 * Signed request objects (RFC 9101, OIDC Core §6) at /auth/authorize: by value and by a
 * registered request_uri, verified with the client's registered keys.
 */

const { publicKey, privateKey } = await generateKeyPair('ES256');
const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'rp-1', alg: 'ES256', use: 'sig' };
const stranger = await generateKeyPair('ES256');

async function requestObject(
  clientId: string,
  params: Record<string, unknown>,
  options: { key?: CryptoKey; aud?: string; lifetime?: number } = {},
) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ client_id: clientId, ...params })
    .setProtectedHeader({ alg: 'ES256', kid: 'rp-1', typ: 'oauth-authz-req+jwt' })
    .setIssuer(clientId)
    .setAudience(options.aud ?? TEST_ISSUER)
    .setIssuedAt(now)
    .setExpirationTime(now + (options.lifetime ?? 300))
    .sign(options.key ?? (privateKey as CryptoKey));
}

async function setup(t: Test, metadata: Record<string, unknown> = {}, config: Record<string, unknown> = {}) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN, ...config } });
  const client = await registerClient(built.app, { jwks: { keys: [publicJwk] }, ...metadata });
  const { browser } = await built.signIn({ username: 'ada' });
  return { ...built, client, browser };
}

const inner = (challenge: string) => ({
  response_type: 'code',
  redirect_uri: REDIRECT,
  scope: 'openid email',
  state: 'st-obj',
  nonce: 'n-obj',
  code_challenge: challenge,
  code_challenge_method: 'S256',
});

t.test('a signed request object by value carries the whole request, its values winning', async (t) => {
  const { app, client, browser } = await setup(t);
  const { verifier, challenge } = pkcePair();
  const request = await requestObject(client.client_id, inner(challenge));
  // OIDC Core §6.1: response_type and client_id (and scope) may also come as plain parameters.
  const { code, res } = await obtainCode(browser, {
    client_id: client.client_id,
    response_type: 'code',
    scope: 'openid',
    state: 'st-outer',
    request,
  });
  t.equal(redirectParams(res).get('state'), 'st-obj', "the request object's state wins");
  const tokens = await exchangeCode(app, client, code, verifier);
  t.equal(tokens.statusCode, 200);
  t.equal(tokens.json().scope, 'openid email');
});

t.test('a request object that does not verify is invalid_request_object at the redirect URI', async (t) => {
  const { client, browser } = await setup(t);
  const { challenge } = pkcePair();
  const cases: Array<[string, Promise<string> | string]> = [
    [
      'signed by a key the client did not register',
      requestObject(client.client_id, inner(challenge), { key: stranger.privateKey as CryptoKey }),
    ],
    ['for another server', requestObject(client.client_id, inner(challenge), { aud: 'https://other.example.com' })],
    ['living too long', requestObject(client.client_id, inner(challenge), { lifetime: 7200 })],
    [
      'unsigned',
      `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...inner(challenge), iss: client.client_id, aud: TEST_ISSUER })).toString('base64url')}.`,
    ],
    ['naming another client', requestObject(client.client_id, { ...inner(challenge), client_id: 'cl_other' })],
  ];
  for (const [name, jwt] of cases) {
    const res = await browser.get(
      authorizeUrl({ client_id: client.client_id, redirect_uri: REDIRECT, state: 'st-outer', request: await jwt }),
    );
    t.equal(res.statusCode, 302, name);
    t.equal(redirectParams(res).get('error'), 'invalid_request_object', name);
    t.equal(redirectParams(res).get('state'), 'st-outer', `${name}: the plain state`);
    t.notOk(redirectParams(res).get('code'), name);
  }
  // Without a plain redirect_uri there is nowhere trustworthy to send the error: a page.
  const page = await browser.get(
    authorizeUrl({
      client_id: client.client_id,
      request: await requestObject(client.client_id, inner(challenge), { key: stranger.privateKey as CryptoKey }),
    }),
  );
  t.equal(page.statusCode, 400);
  t.equal(page.headers.location, undefined);
});

t.test('a registered request_object_signing_alg and require_signed_request_object are enforced', async (t) => {
  const { client, browser } = await setup(t, {
    request_object_signing_alg: 'PS256',
    require_signed_request_object: true,
  });
  const { challenge } = pkcePair();
  const es256 = await browser.get(
    authorizeUrl({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      request: await requestObject(client.client_id, inner(challenge)),
    }),
  );
  t.equal(redirectParams(es256).get('error'), 'invalid_request_object', 'ES256 is not the registered PS256');
  const plain = await browser.get(authorizeUrl({ client_id: client.client_id, ...inner(challenge) }));
  t.equal(redirectParams(plain).get('error'), 'invalid_request', 'a plain request from a client that must sign');
});

t.test('a request_uri must be registered, is fetched through the guarded fetcher, and is verified', async (t) => {
  const tls = makeTestCa(t);
  let served = '';
  const host = await startHttpsServer(t, tls, (_req, res) => {
    res.setHeader('content-type', 'application/oauth-authz-req+jwt');
    res.end(served);
  });
  const requestUri = `${host.origin}/requests/1.jwt`;
  const { app, client, browser } = await setup(
    t,
    { request_uris: [`${requestUri}#abc`] },
    { 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile },
  );
  const { verifier, challenge } = pkcePair();
  served = await requestObject(client.client_id, inner(challenge));
  const { code } = await obtainCode(browser, {
    client_id: client.client_id,
    response_type: 'code',
    scope: 'openid',
    request_uri: `${requestUri}#abc`,
  });
  t.same(host.requests, ['GET /requests/1.jwt'], 'fetched once, without the fragment');
  t.equal((await exchangeCode(app, client, code, verifier)).statusCode, 200);

  const unregistered = await browser.get(
    authorizeUrl({ client_id: client.client_id, redirect_uri: REDIRECT, request_uri: `${host.origin}/other.jwt` }),
  );
  t.equal(redirectParams(unregistered).get('error'), 'invalid_request_uri');
  t.equal(host.requests.length, 1, 'an unregistered request_uri is never fetched');
  const pushed = await browser.get(
    authorizeUrl({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      request_uri: 'urn:ietf:params:oauth:request_uri:abc',
    }),
  );
  t.equal(redirectParams(pushed).get('error'), 'invalid_request_uri');
  served = 'not a jwt';
  const broken = await browser.get(
    authorizeUrl({ client_id: client.client_id, redirect_uri: REDIRECT, request_uri: `${requestUri}#abc` }),
  );
  t.equal(redirectParams(broken).get('error'), 'invalid_request_object');
});

t.test('registration refuses a request_uri on an internal address', async (t) => {
  const { app } = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const res = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: {
      redirect_uris: [REDIRECT],
      jwks: { keys: [publicJwk] },
      request_uris: ['https://169.254.169.254/latest/request.jwt'],
    },
  });
  t.equal(res.statusCode, 400);
  t.match(res.json(), { reason: 'invalid_client_metadata', error_description: /request_uris/ });
});
