import t from 'tap';
import { Writable } from 'node:stream';
import * as client from 'openid-client';
import { calculateJwkThumbprint, decodeJwt, exportJWK } from 'jose';
import { loadControlPlaneConfig } from '../../../config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';

/**
 * openid-client v6 as the relying party against a real control plane listening on a free port.
 * The user signs up and in through the real passkey routes with the software authenticator; the
 * browser's session cookie goes with the authorize request; everything else is the library.
 */
const ADMIN = 'interop-admin-token-0123456789abcdef0123456789';
const CALLBACK = 'http://localhost:9/callback';
const RESOURCE = 'https://api.notes.example.com';

/** The OAuth `error` a library call was refused with (undefined when it succeeded). */
async function refusal(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
    return undefined;
  } catch (error) {
    return (error as { error?: string }).error ?? (error as Error).name;
  }
}

class CookieJar {
  readonly cookies = new Map<string, string>();
  absorb(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

async function start(
  t: Parameters<typeof tempDir>[0],
  extra: Record<string, unknown> = {},
): Promise<RunningControlPlane> {
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir: tempDir(t),
      host: '127.0.0.1',
      port: 0,
      masterKey: TEST_MASTER_KEY,
      logLevel: 'warn',
      adminToken: ADMIN,
      ...extra,
    },
  });
  const server = await startControlPlane(config, {
    logStream: new Writable({
      write(_c, _e, done) {
        done();
      },
    }),
  });
  t.teardown(() => server.close());
  return server;
}

/** Signs up through the real passkey routes and returns the browser's cookies. */
async function passkeySignUp(base: string, username: string): Promise<CookieJar> {
  const jar = new CookieJar();
  const authenticator = new SoftAuthenticator(base);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        origin: base,
        ...(jar.cookies.size ? { cookie: jar.header() } : {}),
      },
      body: JSON.stringify(body),
    });
    jar.absorb(res);
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, any>>;
  };
  const begin = await post('/auth/registration-options', { username });
  await post('/auth/registration-verify', {
    user: username,
    response: authenticator.create(begin.options),
    signupToken: begin.signupToken,
  });
  // A fresh passkey sign-in (usernameless), as a returning user would.
  const options = (await (await fetch(`${base}/auth/assertion-options`)).json()) as Record<string, any>;
  await post('/auth/assertion-verify', { response: authenticator.get(options.options) });
  return jar;
}

async function register(base: string, metadata: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await fetch(`${base}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Interop RP',
      redirect_uris: [CALLBACK],
      post_logout_redirect_uris: ['http://localhost:9/'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email profile offline_access',
      resources: [RESOURCE],
      ...metadata,
    }),
  });
  if (res.status !== 201) throw new Error(`register: ${await res.text()}`);
  return res.json() as Promise<Record<string, any>>;
}

/** What the browser does with the authorization URL: follows it with the session cookie, through the one-tap form. */
async function browse(url: URL, jar: CookieJar, base: string): Promise<URL> {
  let res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
  if (res.status === 200) {
    const html = await res.text();
    const form = new URLSearchParams();
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      form.append(
        m[1]!,
        m[2]!
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'")
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&amp;/g, '&'),
      );
    }
    res = await fetch(`${base}/auth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
  }
  const location = res.headers.get('location');
  if (!location || !location.startsWith(CALLBACK))
    throw new Error(`authorize answered ${res.status} ${location ?? (await res.text())}`);
  return new URL(location);
}

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

  const refreshed = await client.refreshTokenGrant(
    config,
    tokens.refresh_token!,
    { resource: RESOURCE },
    { DPoP: dpop },
  );
  t.equal(decodeJwt(refreshed.access_token).aud, RESOURCE, 'resource indicator at refresh sets the audience');
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
    scope: 'openid',
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
