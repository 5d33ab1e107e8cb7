import t from 'tap';
import { SignJWT, generateKeyPair } from 'jose';
import {
  createClient,
  isKeyplaneSdkError,
  linkableEmail,
  accountKey,
  safeReturnPath,
  type KeyplaneClient,
  type TokenSet,
} from '../../sdk/src/index.js';
import { LiveBrowser, registerLiveClient, startLiveControlPlane } from '../helpers/live-browser.js';

/**
 * The SDK as a relying party against a real control plane on a free port: the browser part is
 * the scripted LiveBrowser (passkey sign-up, one-tap form, step-up), everything else is the SDK.
 */
const CALLBACK = 'http://127.0.0.1:9/callback';

async function refusal(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
    return undefined;
  } catch (error) {
    return isKeyplaneSdkError(error) ? error.code : (error as Error).message;
  }
}

async function setup(
  t: Parameters<typeof startLiveControlPlane>[0],
  options: {
    controlPlane?: Record<string, unknown>;
    client?: Record<string, unknown>;
    dpop?: boolean;
    fetch?: typeof fetch;
  } = {},
) {
  const server = await startLiveControlPlane(t, options.controlPlane);
  const registered = await registerLiveClient(server.url, {
    redirect_uris: [CALLBACK],
    post_logout_redirect_uris: ['http://127.0.0.1:9/'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...options.client,
  });
  const client = createClient({
    issuer: server.url,
    clientId: registered.client_id,
    redirectUri: CALLBACK,
    jwksCooldownMs: 0,
    ...(registered.client_secret ? { clientSecret: registered.client_secret } : {}),
    ...(options.dpop ? { dpop: true } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const browser = new LiveBrowser(server.url);
  await browser.signUp('sdk-alice');
  /** Runs the redirect part of a sign-in and hands the callback to the SDK. */
  const signIn = async (pending = client.authorizationUrl()): Promise<TokenSet> => {
    const request = await pending;
    const landed = await browser.navigate(request.url, { stopAt: CALLBACK });
    if (landed.status !== 0) throw new Error(`the sign-in ended at ${landed.url} (${landed.status})`);
    return client.handleCallback(landed.url, request);
  };
  return { server, registered, client, browser, signIn };
}

t.test(
  'code flow with PKCE S256: authorization URL, callback, ID token verified locally, userinfo, logout URL',
  async (t) => {
    const { server, client, signIn } = await setup(t);
    const request = await client.authorizationUrl();
    const url = new URL(request.url);
    t.equal(url.origin + url.pathname, `${server.url}/auth/authorize`);
    t.equal(url.searchParams.get('code_challenge_method'), 'S256');
    t.equal(url.searchParams.get('response_type'), 'code');
    t.equal(url.searchParams.get('state'), request.state);
    t.equal(url.searchParams.get('nonce'), request.nonce);
    t.ok(request.codeVerifier.length >= 43);

    const tokens = await signIn(Promise.resolve(request));
    t.equal(tokens.tokenType, 'Bearer');
    t.ok(tokens.refreshToken, 'offline_access gave a refresh token');
    t.equal(tokens.claims.iss, server.url);
    t.equal(tokens.claims.nonce, request.nonce);
    t.match(tokens.claims, { acr: 'passkey', svc: { assurance: 'passkey', principal: { type: 'human' } } });
    const info = await client.userinfo(tokens);
    t.equal(info.sub, tokens.claims.sub);
    t.match(await client.logoutUrl({ idTokenHint: tokens.idToken! }), new RegExp(`^${server.url}/auth/logout\\?`));
    t.same(accountKey(tokens.claims), { iss: server.url, sub: tokens.claims.sub });
  },
);

t.test(
  'refuses a callback with another state, another issuer, an error, or no code; nothing is exchanged',
  async (t) => {
    const { server, client } = await setup(t);
    const pending = await client.authorizationUrl();
    const at = (query: Record<string, string>) => `${CALLBACK}?${new URLSearchParams(query)}`;
    t.equal(
      await refusal(client.handleCallback(at({ code: 'c', state: 'other', iss: server.url }), pending)),
      'state_mismatch',
    );
    t.equal(
      await refusal(
        client.handleCallback(at({ code: 'c', state: pending.state, iss: 'https://evil.example' }), pending),
      ),
      'issuer_mismatch',
    );
    t.equal(
      await refusal(client.handleCallback(at({ code: 'c', state: pending.state }), pending)),
      'issuer_mismatch',
      'RFC 9207 iss is required when advertised',
    );
    t.equal(
      await refusal(
        client.handleCallback(at({ error: 'access_denied', state: pending.state, iss: server.url }), pending),
      ),
      'access_denied',
    );
    t.equal(
      await refusal(client.handleCallback(at({ state: pending.state, iss: server.url }), pending)),
      'missing_code',
    );
    t.equal(
      await refusal(client.handleCallback(at({ code: 'forged', state: pending.state, iss: server.url }), pending)),
      'invalid_grant',
    );
  },
);

t.test('verifyIdToken refuses forged, foreign, expired and replayed-nonce tokens', async (t) => {
  const { server, client, registered, signIn } = await setup(t);
  const tokens = await signIn();
  t.equal(await refusal(client.verifyIdToken(tokens.idToken!, { nonce: 'another-nonce' })), 'invalid_id_token');
  const { privateKey } = await generateKeyPair('ES256');
  const forge = (claims: Record<string, unknown>, kid = 'forged') =>
    new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid }).sign(privateKey);
  const now = Math.floor(Date.now() / 1000);
  const good = { iss: server.url, aud: registered.client_id, sub: 'usr_x', iat: now, exp: now + 600 };
  t.equal(await refusal(client.verifyIdToken(await forge(good))), 'invalid_id_token', 'a key not in the JWKS');
  t.equal(
    await refusal(
      client.verifyIdToken(
        await forge(good, String(JSON.parse(Buffer.from(tokens.idToken!.split('.')[0]!, 'base64url').toString()).kid)),
      ),
    ),
    'invalid_id_token',
    'a known kid, another key',
  );
  t.equal(
    await refusal(client.verifyIdToken(tokens.accessToken)),
    'invalid_id_token',
    'an access token is not an ID token (audience)',
  );
  const late = createClient({
    issuer: server.url,
    clientId: registered.client_id,
    redirectUri: CALLBACK,
    now: () => Date.now() + 3_600_000,
  });
  t.equal(await refusal(late.verifyIdToken(tokens.idToken!)), 'invalid_id_token', 'expired');
  t.equal(await refusal(client.verifyIdToken(tokens.idToken!, { maxAge: -60 })), 'invalid_id_token', 'max_age');
});

t.test('concurrent refreshes with one refresh token rotate it once; the family stays usable', async (t) => {
  const { server, client, signIn } = await setup(t);
  const tokens = await signIn();
  let refreshed = 0;
  let revoked = 0;
  server.services.events.subscribe(async (_tx, event) => {
    if (event.type === 'token.refreshed') refreshed++;
    if (event.type === 'token.family_revoked') revoked++;
    return undefined;
  });
  const results = await Promise.all(Array.from({ length: 12 }, () => client.refresh(tokens.refreshToken!)));
  t.equal(refreshed, 1, 'one refresh reached the control plane');
  t.equal(new Set(results.map((r) => r.accessToken)).size, 1, 'every caller got the same tokens');
  t.not(results[0]!.refreshToken, tokens.refreshToken, 'rotated');
  const late = await client.refresh(tokens.refreshToken!);
  t.equal(late.accessToken, results[0]!.accessToken, 'a late caller with the old token gets the remembered result');
  const next = await client.refresh(results[0]!.refreshToken!);
  t.ok(next.accessToken, 'the rotated token works: the family was never revoked');
  t.equal(refreshed, 2);
  t.equal(revoked, 0);
  t.equal(next.claims.sub, tokens.claims.sub);
});

t.test('an ID token signed by a key the cached JWKS has not seen is verified after one refetch', async (t) => {
  let jwksFetches = 0;
  const counting: typeof fetch = async (input, init) => {
    if (/\/jwks|jwks\.json/.test(String(input instanceof Request ? input.url : input))) jwksFetches++;
    return fetch(input, init);
  };
  const { server, client, signIn } = await setup(t, { fetch: counting });
  const first = await signIn();
  t.equal(jwksFetches, 1);
  // Two rotations: the new current key was not even the `next` key the cached JWKS listed.
  await server.services.keys.rotate();
  await server.services.keys.rotate();
  const after = await client.refresh(first.refreshToken!);
  const kid = (token: string) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid;
  t.not(kid(after.idToken!), kid(first.idToken!), 'signed by another key');
  t.equal(after.claims.sub, first.claims.sub);
  t.equal(jwksFetches, 2, 'the unknown kid made the SDK fetch the JWKS once more');
});

t.test('DPoP with server nonces: code exchange, userinfo and refresh retry once on use_dpop_nonce', async (t) => {
  const { client, signIn } = await setup(t, { controlPlane: { 'oidc.dpopNonce': true }, dpop: true });
  const request = await client.authorizationUrl();
  t.ok(new URL(request.url).searchParams.get('dpop_jkt'), 'the code is bound to the key (RFC 9449 §10)');
  const tokens = await signIn(Promise.resolve(request));
  t.equal(tokens.tokenType, 'DPoP');
  const info = await client.userinfo(tokens);
  t.equal(info.sub, tokens.claims.sub);
  const refreshed = await client.refresh(tokens.refreshToken!);
  t.equal(refreshed.tokenType, 'DPoP');
  const bearer = await client.fetchProtected(`${client.options.issuer}/auth/userinfo`, {
    accessToken: refreshed.accessToken,
    tokenType: 'Bearer',
  });
  t.equal(bearer.status, 401, 'a DPoP-bound token presented as Bearer is refused');
});

t.test(
  'requireAssurance: a passkey sign-in does not meet sensitive; the step-up request carries acr_values and max_age=0',
  async (t) => {
    const { client, signIn } = await setup(t);
    const tokens = await signIn();
    const sensitive = client.requireAssurance('sensitive');
    t.equal(sensitive.isMetBy(tokens.claims), false);
    t.equal(client.requireAssurance('passkey').isMetBy(tokens.claims), true);
    const stepUp = await sensitive.stepUp();
    const url = new URL(stepUp.url);
    t.equal(url.searchParams.get('acr_values'), 'sensitive');
    t.equal(url.searchParams.get('max_age'), '0');
    const stepped = await signIn(Promise.resolve(stepUp));
    t.match(stepped.claims, { acr: 'sensitive', svc: { assurance: 'sensitive' } });
    t.equal(sensitive.isMetBy(stepped.claims), true);
    const later = createClient({ ...client.options, now: () => Date.now() + 301_000 });
    t.equal(later.requireAssurance('sensitive').isMetBy(stepped.claims), false, 'the step-up window lapses');
    t.throws(() => client.requireAssurance('root' as never));
  },
);

t.test('a public client signs in with PKCE alone and revokes its refresh token', async (t) => {
  const { client, signIn } = await setup(t, { client: { token_endpoint_auth_method: 'none' } });
  t.equal(client.options.clientSecret, undefined);
  const tokens = await signIn();
  await client.revoke(tokens.refreshToken!, 'refresh_token');
  t.equal(await refusal(client.refresh(tokens.refreshToken!)), 'invalid_grant');
});

t.test('account linking by email only when email_verified is exactly true', async (t) => {
  t.equal(linkableEmail({ email: 'a@example.com', email_verified: true }), 'a@example.com');
  t.equal(linkableEmail({ email: 'a@example.com', email_verified: 'true' }), null);
  t.equal(linkableEmail({ email: 'a@example.com' }), null);
  t.equal(linkableEmail({ email: 'not-an-address', email_verified: true }), null);
  t.throws(() => accountKey({ sub: 'x' }));
});

t.test('return paths stay on the app', async (t) => {
  for (const evil of [
    '//evil.example/x',
    '/\\evil.example',
    '/%09/evil',
    '/\t/evil.example',
    'https://evil.example',
    'javascript:alert(1)',
    '',
    undefined,
  ]) {
    t.equal(safeReturnPath(evil), evil === '/%09/evil' ? '/%09/evil' : '/', String(evil));
  }
  t.equal(safeReturnPath('/a/b?c=1#d'), '/a/b?c=1#d');
});

t.test('createClient refuses a bad issuer or redirect URI, and discovery must name the same issuer', async (t) => {
  t.throws(() => createClient({ issuer: 'https://id.example.com/', clientId: 'c', redirectUri: CALLBACK }));
  t.throws(() => createClient({ issuer: 'https://id.example.com', clientId: '', redirectUri: CALLBACK }));
  t.throws(() => createClient({ issuer: 'https://id.example.com', clientId: 'c', redirectUri: 'not a url' }));
  const server = await startLiveControlPlane(t);
  const wrong = createClient({
    issuer: server.url.replace('localhost', '127.0.0.1'),
    clientId: 'c',
    redirectUri: CALLBACK,
  });
  t.equal(await refusal(wrong.metadata()), 'issuer_mismatch');
  const missing: KeyplaneClient = createClient({
    issuer: `${server.url}/nowhere`,
    clientId: 'c',
    redirectUri: CALLBACK,
  });
  t.equal(await refusal(missing.authorizationUrl()), 'discovery_failed');
});
