import t from 'tap';
import { TEST_ISSUER } from '../../helpers/build.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { buildSignedIn, Browser } from '../../helpers/signed-in.js';
import {
  ADMIN,
  REDIRECT,
  authorizeUrl,
  decodeEntities,
  goodRequest,
  obtainCode,
  pkcePair,
  redirectParams,
  registerClient,
} from '../../helpers/oidc.js';

async function setup(t: Parameters<typeof buildSignedIn>[0], metadata: Record<string, unknown> = {}) {
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const client = await registerClient(built.app, metadata);
  return { ...built, client, challenge: pkcePair().challenge };
}

function isErrorPage(res: { statusCode: number; headers: Record<string, unknown>; body: string }): boolean {
  return (
    res.statusCode === 400 &&
    res.headers.location === undefined &&
    String(res.headers['content-type']).startsWith('text/html') &&
    res.body.includes('cannot continue')
  );
}

t.test('an unknown client or an unregistered redirect URI is shown on a page, never redirected', async (t) => {
  const { app, client, challenge } = await setup(t);
  const browser = new Browser(app);
  t.ok(
    isErrorPage(await browser.get(authorizeUrl(goodRequest({ client_id: 'cl_nobody' }, challenge)))),
    'unknown client',
  );
  t.ok(
    isErrorPage(await browser.get(authorizeUrl({ ...goodRequest(client, challenge), client_id: undefined }))),
    'no client_id',
  );
  const nearMisses: Record<string, string | undefined> = {
    'trailing slash': `${REDIRECT}/`,
    case: 'https://notes.example.com/Callback',
    'host case': 'https://NOTES.example.com/callback',
    'extra query': `${REDIRECT}?x=1`,
    'other host': 'https://evil.example.com/callback',
    'other port': 'https://notes.example.com:8443/callback',
    fragment: `${REDIRECT}#frag`,
    'http instead of https': 'http://notes.example.com/callback',
    missing: undefined,
  };
  for (const [name, uri] of Object.entries(nearMisses)) {
    const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { redirect_uri: uri })));
    t.ok(isErrorPage(res), `${name}: error page, no redirect`);
  }
  const twice = await browser.get(
    `${authorizeUrl(goodRequest(client, challenge))}&redirect_uri=${encodeURIComponent(REDIRECT)}`,
  );
  t.ok(isErrorPage(twice), 'a repeated redirect_uri is not trusted either');
});

t.test('an unknown client says unknown_client: on the page, and as the envelope to a JSON caller', async (t) => {
  const { app, client, challenge } = await setup(t);
  const browser = new Browser(app);
  const page = await browser.get(authorizeUrl(goodRequest({ client_id: 'cl_nobody' }, challenge)), {
    accept: 'text/html',
  });
  t.match(page.body, /<code data-reason="unknown_client">unknown_client<\/code>/);
  const json = await browser.get(authorizeUrl(goodRequest({ client_id: 'cl_nobody' }, challenge)), {
    accept: 'application/json',
  });
  t.equal(json.statusCode, 400);
  t.match(json.json(), { ok: false, reason: 'unknown_client' });
  const redirect = await browser.get(
    authorizeUrl(goodRequest(client, challenge, { redirect_uri: 'https://evil.example.com/cb' })),
    { accept: 'application/json' },
  );
  t.match(redirect.json(), { ok: false, reason: 'unknown_client' }, 'an unregistered redirect URI too');
  t.notOk(redirect.headers.location);
});

t.test('authorize has a per-address throttle of its own', async (t) => {
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN, 'limits.authPerIpPerMinute': 3 } });
  const client = await registerClient(built.app);
  const browser = new Browser(built.app);
  const { challenge } = pkcePair();
  for (let i = 0; i < 3; i++)
    t.equal((await browser.get(authorizeUrl(goodRequest(client, challenge)))).statusCode, 303, `request ${i + 1}`);
  const limited = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(limited.statusCode, 429);
  // The browser reads the refusal on a page (the errors plugin's, for a page route), with Retry-After.
  t.match(limited.headers['content-type'], /^text\/html/);
  t.match(limited.body, /data-reason="rate_limited"/);
  t.ok(Number(limited.headers['retry-after']) >= 1);
  t.equal(
    (await built.app.inject({ method: 'POST', url: '/auth/authorize', payload: { approval: 'x' } })).statusCode,
    429,
    'the one-tap POST counts too',
  );
});

t.test('refusals after the redirect URI is known go back to it with error, state and iss', async (t) => {
  const { app, client, challenge } = await setup(t);
  const browser = new Browser(app);
  const cases: Array<[string, Record<string, string | undefined>, string]> = [
    ['missing PKCE', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
    ['plain PKCE', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['PKCE without a method (plain by default)', { code_challenge_method: undefined }, 'invalid_request'],
    ['a malformed challenge', { code_challenge: 'short' }, 'invalid_request'],
    ['implicit', { response_type: 'token' }, 'unsupported_response_type'],
    ['hybrid code id_token', { response_type: 'code id_token' }, 'unsupported_response_type'],
    ['hybrid code token', { response_type: 'code token' }, 'unsupported_response_type'],
    ['id_token only', { response_type: 'id_token' }, 'unsupported_response_type'],
    ['no response_type', { response_type: undefined }, 'invalid_request'],
    ['a malformed scope', { scope: 'openid  email' }, 'invalid_scope'],
    ['an unregistered resource', { resource: 'https://other.example.com' }, 'invalid_target'],
    ['response_mode fragment', { response_mode: 'fragment' }, 'invalid_request'],
    ['an unknown prompt', { prompt: 'choose' }, 'invalid_request'],
    ['prompt none with login', { prompt: 'none login' }, 'invalid_request'],
    ['a bad max_age', { max_age: '-1' }, 'invalid_request'],
    ['a bad dpop_jkt', { dpop_jkt: 'abc' }, 'invalid_request'],
    ['a request object from a client without keys', { request: 'eyJ.x.y' }, 'request_not_supported'],
    // OIDC Core §3.1.2.6: a client that registered no request_uris cannot pass requests by reference.
    [
      'a request_uri from a client that registered none',
      { request_uri: 'https://notes.example.com/r' },
      'request_uri_not_supported',
    ],
    ['request and request_uri together', { request: 'eyJ.x.y', request_uri: 'https://x.example' }, 'invalid_request'],
    ['the registration parameter', { registration: '{}' }, 'registration_not_supported'],
  ];
  for (const [name, change, error] of cases) {
    const res = await browser.get(authorizeUrl(goodRequest(client, challenge, change)));
    t.equal(res.statusCode, 302, `${name}: redirected`);
    const params = redirectParams(res);
    t.equal(params.base, REDIRECT, `${name}: to the registered URI`);
    t.equal(params.get('error'), error, `${name}: ${error}`);
    t.equal(params.get('state'), 'st-123', `${name}: state`);
    t.equal(params.get('iss'), TEST_ISSUER, `${name}: iss (RFC 9207)`);
    t.notOk(params.get('code'), `${name}: no code`);
  }
  const dup = await browser.get(`${authorizeUrl(goodRequest(client, challenge))}&scope=openid`);
  t.equal(redirectParams(dup).get('error'), 'invalid_request', 'a repeated parameter');
});

t.test('offline_access without the refresh grant registered is ignored, not granted (OIDC Core §11)', async (t) => {
  const { app, challenge, signIn } = await setup(t);
  const noRefresh = await registerClient(app, { grant_types: ['authorization_code'], scope: 'openid email' });
  const { browser } = await signIn({ username: 'ada' });
  const { code } = await obtainCode(browser, goodRequest(noRefresh, challenge, { scope: 'openid offline_access' }));
  t.equal((await app.kp.storage.oidc.findCode(sha256Hex(code)))?.scope, 'openid', 'granted: openid only');
});

t.test('prompt=none without a session is login_required', async (t) => {
  const { app, client, challenge } = await setup(t);
  const res = await new Browser(app).get(authorizeUrl(goodRequest(client, challenge, { prompt: 'none' })));
  t.equal(res.statusCode, 302);
  t.equal(redirectParams(res).get('error'), 'login_required');
  t.equal(redirectParams(res).get('iss'), TEST_ISSUER);
});

t.test(
  'acr_values=sensitive with a passkey session: prompt=none is interaction_required, otherwise a step-up and back',
  async (t) => {
    const { client, challenge, signIn } = await setup(t);
    const { browser } = await signIn({ username: 'alice', assurance: 'passkey' });
    const silent = await browser.get(
      authorizeUrl(goodRequest(client, challenge, { prompt: 'none', acr_values: 'sensitive' })),
    );
    t.equal(redirectParams(silent).get('error'), 'interaction_required');

    const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { acr_values: 'sensitive' })));
    t.equal(res.statusCode, 303);
    const location = new URL(String(res.headers.location), TEST_ISSUER);
    t.equal(location.pathname, '/auth/step-up');
    t.match(location.searchParams.get('return'), /^\/auth\/authorize\?resume=[A-Za-z0-9_-]{32}$/);

    // A step-up later (here: a fresh sensitive sign-in of the same browser), the resumed request continues.
    await signIn({ username: 'alice', assurance: 'sensitive' }, browser);
    const resumed = await browser.get(location.searchParams.get('return')!);
    t.equal(resumed.statusCode, 200, 'the one-tap page');
    t.match(resumed.body, /data-action="continue"/);
  },
);

t.test(
  'prompt=none with a session but no approval is consent_required; once approved it issues a code at once',
  async (t) => {
    const { client, challenge, signIn } = await setup(t);
    const { browser } = await signIn({ username: 'alice' });
    const refused = await browser.get(
      authorizeUrl(goodRequest(client, challenge, { prompt: 'none', acr_values: 'passkey' })),
    );
    t.equal(refused.statusCode, 302);
    t.equal(
      redirectParams(refused).get('error'),
      'consent_required',
      'OIDC Core §3.1.2.6: never a code without an approval',
    );
    t.notOk(redirectParams(refused).get('code'));
    t.equal(redirectParams(refused).get('state'), 'st-123');
    await obtainCode(browser, goodRequest(client, challenge));
    const res = await browser.get(
      authorizeUrl(goodRequest(client, challenge, { prompt: 'none', acr_values: 'passkey' })),
    );
    t.equal(res.statusCode, 302);
    t.ok(redirectParams(res).get('code'), 'acr passkey is met by a passkey session');
    t.equal(redirectParams(res).get('state'), 'st-123');
  },
);

t.test('without a session the sign-in page is shown and the request resumes after sign-in', async (t) => {
  const { app, client, challenge, signIn } = await setup(t);
  const browser = new Browser(app);
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  t.equal(res.statusCode, 303);
  const location = new URL(String(res.headers.location), TEST_ISSUER);
  t.equal(location.pathname, '/auth');
  const back = location.searchParams.get('return')!;
  t.match(back, /^\/auth\/authorize\?resume=/);
  const signInPage = await browser.get(`${location.pathname}${location.search}`);
  t.equal(signInPage.statusCode, 200);

  await signIn({ username: 'alice' }, browser);
  const resumed = await browser.get(back);
  t.equal(resumed.statusCode, 200);
  t.match(resumed.body, /data-action="continue"/);

  const expired = await browser.get('/auth/authorize?resume=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
  t.equal(expired.statusCode, 400);
  t.match(expired.body, /expired/);
});

t.test('prompt=login sends a signed-in user through sign-in once, then continues', async (t) => {
  const { client, challenge, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'alice' });
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { prompt: 'login' })));
  t.equal(res.statusCode, 303);
  const back = new URL(String(res.headers.location), TEST_ISSUER).searchParams.get('return')!;
  const stale = await browser.get(back);
  t.equal(stale.statusCode, 303, 'the old sign-in does not honour prompt=login');
  await new Promise((resolve) => setTimeout(resolve, 5));
  await signIn({ username: 'alice' }, browser);
  const resumed = await browser.get(back);
  t.equal(resumed.statusCode, 200);
});

t.test('the one-tap form: deny, a forged approval, and another session are refused', async (t) => {
  const { client, challenge, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'alice' });
  const page = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  const form: Record<string, string> = {};
  for (const m of page.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    form[m[1]!] = decodeEntities(m[2]!);
  t.match(form, { client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: challenge, approval: /.+/ });

  const tampered = await browser.request(
    'POST',
    '/auth/authorize',
    new URLSearchParams({ ...form, scope: 'openid' }).toString(),
    { 'content-type': 'application/x-www-form-urlencoded' },
  );
  t.equal(tampered.statusCode, 403, 'changed parameters do not match the approval');

  const page2 = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  const form2: Record<string, string> = {};
  for (const m of page2.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    form2[m[1]!] = decodeEntities(m[2]!);
  const { browser: mallory } = await signIn({ username: 'mallory' });
  const stolen = await mallory.request('POST', '/auth/authorize', new URLSearchParams(form2).toString(), {
    'content-type': 'application/x-www-form-urlencoded',
  });
  t.equal(stolen.statusCode, 403, 'an approval works only for the session it was shown to');

  const page3 = await browser.get(authorizeUrl(goodRequest(client, challenge)));
  const form3: Record<string, string> = {};
  for (const m of page3.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    form3[m[1]!] = decodeEntities(m[2]!);
  const deny = await browser.request(
    'POST',
    '/auth/authorize',
    new URLSearchParams({ ...form3, decision: 'deny' }).toString(),
    { 'content-type': 'application/x-www-form-urlencoded' },
  );
  t.equal(deny.statusCode, 303);
  t.equal(redirectParams(deny).get('error'), 'access_denied');

  const crossSite = await browser.request('POST', '/auth/authorize', new URLSearchParams(form3).toString(), {
    'content-type': 'application/x-www-form-urlencoded',
    origin: 'https://evil.example.com',
  });
  t.equal(crossSite.statusCode, 403, 'a cross-origin POST with the session is refused by the Origin check');
});

t.test('response_mode=web_message answers with a page that posts to the redirect URI origin only', async (t) => {
  const { app, client, challenge, signIn } = await setup(t, { in_place: true });
  const { browser } = await signIn({ username: 'alice' });
  await obtainCode(browser, goodRequest(client, challenge));
  const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { response_mode: 'web_message' })));
  t.equal(res.statusCode, 200);
  t.match(res.body, /data-origin="https:\/\/notes\.example\.com"/);
  t.match(res.body, /&quot;code&quot;:&quot;[A-Za-z0-9_-]{43}&quot;/);
  t.match(res.body, /&quot;iss&quot;:&quot;http:\/\/localhost:4400&quot;/);
  t.match(res.body, /<script type="module" nonce="[^"]+" src="\/auth\/authorize\/web-message\.js"><\/script>/);
  t.notMatch(res.body, /onload=|onclick=/);
  const script = await app.inject({ method: 'GET', url: '/auth/authorize/web-message.js' });
  t.equal(script.statusCode, 200);
  t.match(script.body, /window\.opener\.postMessage\(response, origin\)/);

  const error = await browser.get(
    authorizeUrl(goodRequest(client, challenge, { response_mode: 'web_message', response_type: 'token' })),
  );
  t.match(error.body, /unsupported_response_type/);
});

t.test(
  'response_mode=web_message is refused (by a query redirect) for a client without in-place sign-in',
  async (t) => {
    const { client, challenge, signIn } = await setup(t);
    const { browser } = await signIn({ username: 'alice' });
    const res = await browser.get(authorizeUrl(goodRequest(client, challenge, { response_mode: 'web_message' })));
    const params = redirectParams(res);
    t.equal(params.base, REDIRECT);
    t.equal(params.get('error'), 'invalid_request');
    t.match(params.get('error_description'), /in_place/);
    t.equal(params.get('code'), null);
  },
);

t.test('discovery advertises the provider endpoints and capabilities', async (t) => {
  const { app } = await setup(t);
  const doc = (await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
  t.match(doc, {
    authorization_endpoint: `${TEST_ISSUER}/auth/authorize`,
    token_endpoint: `${TEST_ISSUER}/auth/token`,
    userinfo_endpoint: `${TEST_ISSUER}/auth/userinfo`,
    revocation_endpoint: `${TEST_ISSUER}/auth/revoke`,
    introspection_endpoint: `${TEST_ISSUER}/auth/introspect`,
    end_session_endpoint: `${TEST_ISSUER}/auth/logout`,
    code_challenge_methods_supported: ['S256'],
    response_modes_supported: ['query', 'form_post', 'web_message'],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    request_parameter_supported: true,
    request_uri_parameter_supported: true,
    require_request_uri_registration: true,
    request_object_signing_alg_values_supported: ['ES256', 'EdDSA', 'PS256', 'RS256'],
    userinfo_signing_alg_values_supported: ['ES256'],
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    frontchannel_logout_supported: true,
    frontchannel_logout_session_supported: true,
    authorization_response_iss_parameter_supported: true,
    acr_values_supported: ['recovery', 'email', 'passkey', 'sensitive'],
    dpop_signing_alg_values_supported: ['ES256', 'EdDSA'],
    pushed_authorization_request_endpoint: `${TEST_ISSUER}/auth/par`,
    require_pushed_authorization_requests: false,
    device_authorization_endpoint: `${TEST_ISSUER}/auth/device`,
  });
  t.same(doc.grant_types_supported.sort(), [
    'authorization_code',
    'client_credentials',
    'refresh_token',
    'urn:ietf:params:oauth:grant-type:device_code',
    'urn:ietf:params:oauth:grant-type:jwt-bearer',
    'urn:ietf:params:oauth:grant-type:token-exchange',
  ]);
  t.same(doc.scopes_supported, ['openid', 'email', 'profile', 'orgs', 'groups', 'offline_access']);
  t.ok(doc.token_endpoint_auth_methods_supported.includes('none'));
});
