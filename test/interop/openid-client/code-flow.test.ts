import t from 'tap';
import * as client from 'openid-client';
import { calculateJwkThumbprint, decodeJwt, exportJWK } from 'jose';
import { CALLBACK, RESOURCE, browse, passkeySignUp, refusal, register, start } from '../../helpers/openid-client.js';

/**
 * openid-client v6 as the relying party against a real control plane listening on a free port.
 * The user signs up and in through the real passkey routes with the software authenticator; the
 * browser's session cookie goes with the authorize request; everything else is the library.
 */

t.test(
  'openid-client: code flow with PKCE against a passkey session, ID token, userinfo, refresh rotation, revocation',
  async (t) => {
    const server = await start(t);
    const base = server.url;
    const jar = await passkeySignUp(base, 'interop-alice');
    const registered = await register(base, { token_endpoint_auth_method: 'client_secret_basic' });
    const config = await client.discovery(
      new URL(base),
      registered.client_id,
      registered.client_secret,
      client.ClientSecretBasic(registered.client_secret),
      { execute: [client.allowInsecureRequests] },
    );
    t.equal(config.serverMetadata().issuer, base);

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: 'openid email profile offline_access',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const callback = await browse(url, jar, base);
    t.equal(callback.searchParams.get('iss'), base, 'RFC 9207 iss');

    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    t.equal(claims.iss, base);
    t.equal(claims.aud, registered.client_id);
    t.equal(claims.nonce, nonce);
    t.match(claims, { acr: 'passkey', svc: { assurance: 'passkey', principal: { type: 'human', id: claims.sub } } });
    t.equal(tokens.token_type.toLowerCase(), 'bearer');

    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    t.equal(info.sub, claims.sub);
    t.equal(info.preferred_username, 'interop-alice');
    t.notOk('ok' in info, 'userinfo holds claims only');
    t.notOk('ok' in tokens, 'the token response holds its standard members');

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    t.not(refreshed.refresh_token, tokens.refresh_token, 'rotated');
    t.equal(refreshed.claims()!.sub, claims.sub);
    t.equal(
      await refusal(client.refreshTokenGrant(config, tokens.refresh_token!)),
      'invalid_grant',
      'the rotated-out token is refused',
    );
    t.equal(
      await refusal(client.refreshTokenGrant(config, refreshed.refresh_token!)),
      'invalid_grant',
      'and its reuse revoked the family',
    );

    // A new grant, then revoked through the library.
    const again = client.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: 'openid offline_access',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const second = await client.authorizationCodeGrant(config, await browse(again, jar, base), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    await client.tokenRevocation(config, second.refresh_token!);
    t.equal(await refusal(client.refreshTokenGrant(config, second.refresh_token!)), 'invalid_grant');
    await t.rejects(
      client.fetchUserInfo(config, second.access_token, claims.sub),
      "the family's access token is revoked too",
    );

    // RP-initiated logout URL built by the library, exact post_logout_redirect_uri.
    const logout = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token!,
      post_logout_redirect_uri: 'http://localhost:9/',
      state: 'bye',
    });
    const out = await fetch(logout, { redirect: 'manual', headers: { cookie: jar.header() } });
    t.equal(out.status, 302);
    t.equal(out.headers.get('location'), 'http://localhost:9/?state=bye');
  },
);

t.test("openid-client: DPoP through the library's handle, with resource indicators, for a public client", async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'interop-bob');
  const registered = await register(base, { token_endpoint_auth_method: 'none' });
  const config = await client.discovery(new URL(base), registered.client_id, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  const keyPair = await client.randomDPoPKeyPair('ES256');
  const dpop = client.getDPoPHandle(config, keyPair);
  const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    dpop_jkt: jkt,
  });
  const tokens = await client.authorizationCodeGrant(
    config,
    await browse(url, jar, base),
    { pkceCodeVerifier: verifier, expectedState: state },
    undefined,
    { DPoP: dpop },
  );
  t.equal(tokens.token_type.toLowerCase(), 'dpop');
  const at = decodeJwt(tokens.access_token);
  t.same(at.cnf, { jkt });
  const info = await client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck, { DPoP: dpop });
  t.equal(info.sub, at.sub);

  t.equal(
    await refusal(client.refreshTokenGrant(config, tokens.refresh_token!, { resource: RESOURCE }, { DPoP: dpop })),
    'invalid_target',
    'a resource the approval never named is not granted at refresh',
  );
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: dpop });
  t.equal(decodeJwt(refreshed.access_token).aud, registered.client_id);
  t.equal(refreshed.token_type.toLowerCase(), 'dpop');

  const other = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
  t.equal(
    await refusal(client.refreshTokenGrant(config, refreshed.refresh_token!, undefined, { DPoP: other })),
    'invalid_grant',
    'the refresh token is bound to the key',
  );

  // Resource indicator at authorize: aud is the resource, the ID token's aud stays the client.
  const withResource = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    resource: RESOURCE,
  });
  const rs = await client.authorizationCodeGrant(
    config,
    await browse(withResource, jar, base),
    { pkceCodeVerifier: verifier, expectedState: state },
    undefined,
    { DPoP: dpop },
  );
  t.equal(decodeJwt(rs.access_token).aud, RESOURCE);
  t.equal(rs.claims()!.aud, registered.client_id);
  const again = await client.refreshTokenGrant(config, rs.refresh_token!, { resource: RESOURCE }, { DPoP: dpop });
  t.equal(decodeJwt(again.access_token).aud, RESOURCE, 'the approved resource indicator at refresh sets the audience');
});

t.test('openid-client: DPoP server nonces are picked up and retried by the library', async (t) => {
  const server = await start(t, { 'oidc.dpopNonce': true });
  const base = server.url;
  const jar = await passkeySignUp(base, 'interop-carol');
  const registered = await register(base, { token_endpoint_auth_method: 'client_secret_post' });
  const config = await client.discovery(
    new URL(base),
    registered.client_id,
    registered.client_secret,
    client.ClientSecretPost(registered.client_secret),
    { execute: [client.allowInsecureRequests] },
  );
  const dpop = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: CALLBACK,
    scope: 'openid offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  const callback = await browse(url, jar, base);
  // The first request of each server learns its nonce (use_dpop_nonce); openid-client retries once with it.
  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: verifier, expectedState: state },
    undefined,
    { DPoP: dpop },
  );
  t.equal(tokens.token_type.toLowerCase(), 'dpop');
  const info = await client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck, { DPoP: dpop });
  t.ok(info.sub);
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: dpop });
  t.equal(refreshed.token_type.toLowerCase(), 'dpop', 'the cached nonce works for the next request');
});
