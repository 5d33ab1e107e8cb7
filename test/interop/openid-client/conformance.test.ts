import t, { type Test } from 'tap';
import * as client from 'openid-client';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, type CryptoKey } from 'jose';
import {
  ADMIN,
  CALLBACK,
  CookieJar,
  browse,
  passkeySignUp,
  refusal,
  register,
  start,
} from '../../helpers/openid-client.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import { decodeEntities } from '../../helpers/oidc.js';

/**
 * What the OpenID Foundation's Basic, Config and Dynamic OP plans check and Keyplane once failed,
 * through openid-client as the relying party against a real control plane: dynamic registration
 * without `scope`, signed request objects, id_token_hint, signed userinfo, form_post, and
 * back-channel logout to a relying party that verifies the logout token with the JWKS.
 */

async function discover(
  base: string,
  registered: Record<string, any>,
  metadata: Partial<client.ClientMetadata> = {},
): Promise<client.Configuration> {
  return client.discovery(
    new URL(base),
    registered.client_id,
    { client_secret: registered.client_secret, ...metadata },
    client.ClientSecretBasic(registered.client_secret),
    { execute: [client.allowInsecureRequests] },
  );
}

async function codeFlow(
  config: client.Configuration,
  jar: CookieJar,
  base: string,
  extra: Record<string, string> = {},
) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid email profile',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...extra,
  });
  const callback = await browse(url, jar, base);
  return client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
}

t.test('dynamic registration without scope, then email and profile; an unknown scope is ignored', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'conf-alice');
  const config = await client.dynamicClientRegistration(
    new URL(base),
    { redirect_uris: [CALLBACK], token_endpoint_auth_method: 'client_secret_basic' },
    client.ClientSecretBasic(),
    { initialAccessToken: ADMIN, execute: [client.allowInsecureRequests] },
  );
  t.equal(config.clientMetadata().scope, 'openid email profile', 'the standard scopes by default');
  const tokens = await codeFlow(config, jar, base, { scope: 'openid email profile phone' });
  t.equal(tokens.scope, 'openid email profile');
  t.match(tokens.claims(), { preferred_username: 'conf-alice' });

  const refused = await refusal(
    client.dynamicClientRegistration(
      new URL(base),
      { redirect_uris: [CALLBACK], id_token_signed_response_alg: 'RS256' },
      undefined,
      { initialAccessToken: ADMIN, execute: [client.allowInsecureRequests] },
    ),
  );
  t.equal(refused, 'invalid_client_metadata', 'RS256 ID tokens are refused at registration, not ignored');
});

t.test('signed request objects (JAR) by value, verified with the registered key', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'conf-bob');
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const registered = await register(base, {
    token_endpoint_auth_method: 'client_secret_basic',
    jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'rp-key' }] },
    request_object_signing_alg: 'ES256',
    require_signed_request_object: true,
  });
  const config = await discover(base, registered, { request_object_signing_alg: 'ES256' });
  const metadata = config.serverMetadata();
  t.equal(metadata.request_parameter_supported, true);
  t.ok(metadata.request_object_signing_alg_values_supported?.includes('ES256'));

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = await client.buildAuthorizationUrlWithJAR(
    config,
    {
      redirect_uri: CALLBACK,
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    },
    { key: privateKey as CryptoKey, kid: 'rp-key' },
  );
  t.ok(url.searchParams.get('request'), 'the request travels as a JWT');
  t.notOk(url.searchParams.get('redirect_uri'));
  const tokens = await client.authorizationCodeGrant(config, await browse(url, jar, base), {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  t.equal(tokens.scope, 'openid email');

  // A plain request from a client that registered require_signed_request_object is refused.
  const plain = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const res = await fetch(plain, { redirect: 'manual', headers: { cookie: jar.header() } });
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_request');
});

t.test('id_token_hint, signed userinfo and userinfo by POST body', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'conf-carol');
  const registered = await register(base, {
    token_endpoint_auth_method: 'client_secret_basic',
    userinfo_signed_response_alg: 'ES256',
  });
  const config = await discover(base, registered, { userinfo_signed_response_alg: 'ES256' });
  const tokens = await codeFlow(config, jar, base);
  const sub = tokens.claims()!.sub;

  const info = await client.fetchUserInfo(config, tokens.access_token, sub);
  t.match(info, { sub, preferred_username: 'conf-carol' }, 'the library verified the signed userinfo');

  const posted = await fetch(`${base}/auth/userinfo`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/jwt' },
    body: new URLSearchParams({ access_token: tokens.access_token }),
  });
  t.equal(posted.status, 200, 'RFC 6750 §2.2');
  t.match(posted.headers.get('content-type'), /^application\/jwt/);

  const again = await codeFlow(config, jar, base, { prompt: 'none', id_token_hint: tokens.id_token! });
  t.equal(again.claims()!.sub, sub, 'the hinted account is signed in: a code at once');

  // Another account signs in in the same browser: the hint for carol is login_required.
  const other = await passkeySignUp(base, 'conf-dave');
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid',
    prompt: 'none',
    id_token_hint: tokens.id_token!,
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
    code_challenge_method: 'S256',
  });
  const res = await fetch(url, { redirect: 'manual', headers: { cookie: other.header() } });
  t.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'login_required');
});

t.test('form_post: the library takes the response from the posted form', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'conf-erin');
  const registered = await register(base, { token_endpoint_auth_method: 'client_secret_basic' });
  const config = await discover(base, registered);
  await codeFlow(config, jar, base);
  t.ok(config.serverMetadata().response_modes_supported?.includes('form_post'));

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid',
    response_mode: 'form_post',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  const page = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
  t.equal(page.status, 200);
  const html = await page.text();
  t.match(html, `action="${CALLBACK}"`);
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    form.append(m[1]!, decodeEntities(m[2]!));
  // What the browser's POST delivers to the relying party's callback.
  const posted = new Request(CALLBACK, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  const tokens = await client.authorizationCodeGrant(config, posted, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  t.ok(tokens.access_token);
});

t.test('back-channel logout: the relying party verifies the logout token with the JWKS', async (t: Test) => {
  const tls = makeTestCa(t);
  let resolveDelivery!: (token: string) => void;
  const delivered = new Promise<string>((resolve) => (resolveDelivery = resolve));
  const rp = await startHttpsServer(t, tls, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      res.statusCode = 200;
      res.setHeader('cache-control', 'no-store');
      res.end();
      resolveDelivery(new URLSearchParams(body).get('logout_token') ?? '');
    });
  });
  const server = await start(t, { 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile });
  const base = server.url;
  const jar = await passkeySignUp(base, 'conf-frank');
  const registered = await register(base, {
    token_endpoint_auth_method: 'client_secret_basic',
    backchannel_logout_uri: `${rp.origin}/backchannel-logout`,
    backchannel_logout_session_required: true,
  });
  const config = await discover(base, registered);
  const metadata = config.serverMetadata();
  t.equal(metadata.backchannel_logout_supported, true);
  t.equal(metadata.backchannel_logout_session_supported, true);
  const tokens = await codeFlow(config, jar, base);
  const idClaims = tokens.claims()!;

  // RP-initiated logout with the hint: the session ends at once, and the RP hears of it.
  const end = client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token! });
  const out = await fetch(end, { redirect: 'manual', headers: { cookie: jar.header() } });
  t.equal(out.status, 200);

  const timeout = new Promise<never>((_, reject) => {
    const timer = setTimeout(() => reject(new Error('no logout token within 20 s')), 20_000);
    timer.unref();
  });
  const token = await Promise.race([delivered, timeout]);
  // What a relying party does (Back-Channel Logout 1.0 §2.6), with the keys discovery names.
  const { payload, protectedHeader } = await jwtVerify(token, createRemoteJWKSet(new URL(metadata.jwks_uri!)), {
    issuer: metadata.issuer,
    audience: registered.client_id,
    typ: 'logout+jwt',
    algorithms: ['ES256'],
    requiredClaims: ['iat', 'exp', 'jti', 'events'],
  });
  t.equal(protectedHeader.alg, 'ES256');
  t.equal(payload.sub, idClaims.sub);
  t.equal(payload.sid, idClaims.sid, 'the session its ID token named');
  t.same(payload.events, { 'http://schemas.openid.net/event/backchannel-logout': {} });
  t.notOk('nonce' in payload);
  t.equal(await refusal(client.refreshTokenGrant(config, 'x')), 'invalid_grant');
});
