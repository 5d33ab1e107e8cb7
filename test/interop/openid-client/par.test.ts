import t from 'tap';
import * as client from 'openid-client';
import { calculateJwkThumbprint, decodeJwt, exportJWK } from 'jose';
import { CALLBACK, browse, passkeySignUp, refusal, register, start } from '../../helpers/openid-client.js';

/**
 * Pushed authorization requests (RFC 9126) through openid-client's `buildAuthorizationUrlWithPAR`
 * against a real control plane: the push, the one-use request_uri, a client that must push, and
 * DPoP at the push binding the code (RFC 9449 §10.1).
 */

async function discover(base: string, registered: Record<string, any>): Promise<client.Configuration> {
  const auth =
    registered.token_endpoint_auth_method === 'none'
      ? client.None()
      : client.ClientSecretBasic(registered.client_secret as string);
  return client.discovery(new URL(base), registered.client_id, registered.client_secret, auth, {
    execute: [client.allowInsecureRequests],
  });
}

t.test('openid-client: a pushed request runs once at authorize, and the refusals of RFC 9126', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'par-alice');
  const registered = await register(base, { token_endpoint_auth_method: 'client_secret_basic' });
  const config = await discover(base, registered);
  const metadata = config.serverMetadata();
  t.equal(metadata.pushed_authorization_request_endpoint, `${base}/auth/par`);
  t.equal(metadata.require_pushed_authorization_requests, false);

  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const parameters = {
    redirect_uri: CALLBACK,
    scope: 'openid email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  };
  const url = await client.buildAuthorizationUrlWithPAR(config, parameters);
  t.same([...url.searchParams.keys()].sort(), ['client_id', 'request_uri'], 'the URL carries only the reference');
  t.match(url.searchParams.get('request_uri'), /^urn:ietf:params:oauth:request_uri:/);
  const callback = await browse(url, jar, base);
  t.equal(callback.searchParams.get('iss'), base);
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  t.equal(tokens.claims()!.aud, registered.client_id);

  // One use: the same request_uri again is refused on a page, never redirected.
  const again = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
  t.equal(again.status, 400, 'a used request_uri is refused');
  t.equal(again.headers.get('location'), null);

  // Outer parameters are ignored: only the pushed ones count (RFC 9126 §4).
  const pushed = await client.buildAuthorizationUrlWithPAR(config, parameters);
  pushed.searchParams.set('scope', 'openid profile');
  pushed.searchParams.set('state', 'outer');
  const ignored = await browse(pushed, jar, base);
  t.equal(ignored.searchParams.get('state'), state, 'the pushed state, not the outer one');

  // Another client cannot redeem this client's request_uri.
  const other = await register(base, { token_endpoint_auth_method: 'none' });
  const stolen = await client.buildAuthorizationUrlWithPAR(config, parameters);
  stolen.searchParams.set('client_id', other.client_id);
  const refused = await fetch(stolen, { redirect: 'manual', headers: { cookie: jar.header() } });
  t.equal(refused.status, 400);
  t.equal(refused.headers.get('location'), null);

  // Refusals at the push itself.
  t.equal(
    await refusal(
      client.buildAuthorizationUrlWithPAR(config, {
        ...parameters,
        request_uri: 'urn:ietf:params:oauth:request_uri:x',
      }),
    ),
    'invalid_request',
    'request_uri inside a push',
  );
  t.equal(
    await refusal(client.buildAuthorizationUrlWithPAR(config, { ...parameters, redirect_uri: 'http://localhost:9/x' })),
    'invalid_request',
    'an unregistered redirect_uri',
  );
  t.equal(
    await refusal(client.buildAuthorizationUrlWithPAR(config, { ...parameters, code_challenge_method: 'plain' })),
    'invalid_request',
    'PKCE plain',
  );
  t.equal(
    await refusal(
      client.buildAuthorizationUrlWithPAR(config, { ...parameters, resource: 'https://elsewhere.example' }),
    ),
    'invalid_target',
  );
  const wrongSecret = await client.discovery(
    new URL(base),
    registered.client_id,
    'not-the-secret',
    client.ClientSecretBasic('not-the-secret'),
    { execute: [client.allowInsecureRequests] },
  );
  const unauthenticated = await client.buildAuthorizationUrlWithPAR(wrongSecret, parameters).catch((e: unknown) => e);
  t.match(unauthenticated, { name: 'WWWAuthenticateChallengeError', status: 401 }, 'a wrong client secret');
  t.equal(
    ((await (unauthenticated as { response: Response }).response.json()) as { error: string }).error,
    'invalid_client',
  );
});

t.test('a client registered with require_pushed_authorization_requests may only push', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'par-bob');
  const registered = await register(base, {
    token_endpoint_auth_method: 'client_secret_basic',
    require_pushed_authorization_requests: true,
  });
  t.equal(registered.require_pushed_authorization_requests, true, 'the registration keeps it');
  const config = await discover(base, registered);
  const verifier = client.randomPKCECodeVerifier();
  const parameters = {
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 's1',
  };
  const plain = await fetch(client.buildAuthorizationUrl(config, parameters), {
    redirect: 'manual',
    headers: { cookie: jar.header() },
  });
  const location = new URL(plain.headers.get('location')!);
  t.equal(location.searchParams.get('error'), 'invalid_request', 'a plain request is refused at the redirect URI');
  t.equal(location.searchParams.get('iss'), base);

  const callback = await browse(await client.buildAuthorizationUrlWithPAR(config, parameters), jar, base);
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedState: 's1',
  });
  t.ok(tokens.access_token, 'the pushed request works');
});

t.test('openid-client: DPoP at the push binds the code to that key', async (t) => {
  const server = await start(t);
  const base = server.url;
  const jar = await passkeySignUp(base, 'par-carol');
  const registered = await register(base, { token_endpoint_auth_method: 'none' });
  const config = await discover(base, registered);
  const keyPair = await client.randomDPoPKeyPair('ES256');
  const dpop = client.getDPoPHandle(config, keyPair);
  const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey));
  const verifier = client.randomPKCECodeVerifier();
  const parameters = {
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state: 's2',
  };

  const stolenCode = await browse(
    await client.buildAuthorizationUrlWithPAR(config, parameters, { DPoP: dpop }),
    jar,
    base,
  );
  const thief = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
  t.equal(
    await refusal(
      client.authorizationCodeGrant(
        config,
        stolenCode,
        { pkceCodeVerifier: verifier, expectedState: 's2' },
        undefined,
        {
          DPoP: thief,
        },
      ),
    ),
    'invalid_dpop_proof',
    'a code pushed with one key is refused with another',
  );

  const callback = await browse(
    await client.buildAuthorizationUrlWithPAR(config, parameters, { DPoP: dpop }),
    jar,
    base,
  );
  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: verifier, expectedState: 's2' },
    undefined,
    { DPoP: dpop },
  );
  t.same(decodeJwt(tokens.access_token).cnf, { jkt });

  t.equal(
    await refusal(
      client.buildAuthorizationUrlWithPAR(config, { ...parameters, dpop_jkt: 'A'.repeat(43) }, { DPoP: dpop }),
    ),
    'invalid_request',
    'a dpop_jkt naming another key than the proof',
  );
});
