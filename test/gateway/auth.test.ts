import t from 'tap';
import { request } from 'undici';
import { parseCookieHeader, readLoginCookie } from '#lib/gateway-protocol/session-cookie.js';
import { MemorySharedState } from '#lib/runtime/shared-state/index.js';
import {
  CONTROL_PLANE,
  CLIENT_ID,
  dpopClient,
  signAccessToken,
  signInRedirect,
  startTestGateway,
  startUpstream,
} from './helpers.js';

const POLICY = {
  mode: 'enforce' as const,
  routes: [
    { path: '/', min_assurance: 'email' as const },
    { path: '/admin', min_assurance: 'sensitive' as const },
    { path: '/api', scopes: ['read'] },
    { path: '/agents', principals: ['agent' as const], dpop: 'required' as const },
    { path: '/public', public: true },
  ],
};
const HTML = { accept: 'text/html,application/xhtml+xml' };

t.test('browsers without a session go to sign-in; API callers get 401 and no redirect', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY });
  const browser = await request(`${gw.url}/app/page?x=1`, { headers: HTML });
  t.match(
    await signInRedirect(gw.running.gateway, browser),
    { returnTo: '/app/page?x=1', acr: null },
    "straight to the control plane's authorize, the way back kept in the login cookie",
  );
  const sneaky = await request(`${gw.url}//evil.example/x`, { headers: HTML });
  t.match(
    await signInRedirect(gw.running.gateway, sneaky),
    { returnTo: '/' },
    'a path that reads as another host is never a way back',
  );
  const api = await request(`${gw.url}/app/page`, { headers: { accept: 'application/json' } });
  t.equal(api.statusCode, 401);
  t.match(await api.body.json(), { ok: false, reason: 'unauthorized' });
  t.match(String(api.headers['www-authenticate']), /^Bearer realm="[^"]+", DPoP algs="ES256 EdDSA"$/);
  const post = await request(`${gw.url}/app/page`, { method: 'POST', headers: HTML, body: 'x' });
  t.equal(post.statusCode, 401, 'only navigations are redirected');
  t.equal((await request(`${gw.url}/public/logo`)).statusCode, 200, 'a public route needs nobody');
  t.equal(upstream.seen.length, 1);
});

t.test('sign-in redirects to authorize with PKCE S256 and a per-state login cookie', async (t) => {
  const gw = await startTestGateway(t, { policy: POLICY });
  const one = await request(`${gw.url}/_gate/signin?rd=${encodeURIComponent('/app?x=1')}`);
  const two = await request(`${gw.url}/_gate/signin?rd=/other&acr_values=sensitive`);
  t.equal(one.statusCode, 302);
  const location = new URL(String(one.headers['location']));
  t.equal(`${location.origin}${location.pathname}`, `${CONTROL_PLANE}/auth/authorize`);
  t.match(Object.fromEntries(location.searchParams), {
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: `${gw.url}/_gate/callback`,
    code_challenge_method: 'S256',
    scope: 'openid email',
  });
  const state = location.searchParams.get('state')!;
  const cookies = [one.headers['set-cookie']].flat().map(String);
  t.ok(cookies.some((line) => line.startsWith(`kp_gate_login.${state}=`) && /HttpOnly; SameSite=Lax/.test(line)));
  const jar = parseCookieHeader(cookies.map((line) => line.split(';')[0]).join('; '));
  const login = await readLoginCookie(jar, state, {
    keys: gw.running.gateway.cookieKeys,
    now: Date.now(),
    secure: false,
  });
  t.equal(login?.returnTo, '/app?x=1');
  t.equal(login?.nonce, location.searchParams.get('nonce'));

  const stepUp = new URL(String(two.headers['location']));
  t.equal(stepUp.searchParams.get('acr_values'), 'sensitive');
  t.equal(stepUp.searchParams.get('max_age'), '0');
  t.not(stepUp.searchParams.get('state'), state, 'parallel logins have their own state');

  for (const rd of ['//evil.example', 'https://evil.example/', '/\\evil.example']) {
    const res = await request(`${gw.url}/_gate/signin?rd=${encodeURIComponent(rd)}`);
    t.equal(res.statusCode, 400, rd);
    t.match(await res.body.json(), { reason: 'invalid_return' });
  }
  t.equal(
    (await request(`${gw.url}/_gate/callback?code=x&state=y`)).statusCode,
    503,
    'without a client secret the callback cannot exchange a code: not_ready',
  );
});

t.test(
  'sign-out: a GET only shows a confirmation form; the POST with its CSRF token clears the session and calls RP-initiated logout',
  async (t) => {
    const gw = await startTestGateway(t, { policy: POLICY });
    const cookie = await gw.sessionCookie({ idToken: 'id.token.value' });
    const page = await request(`${gw.url}/_gate/signout?rd=/later`, {
      headers: { cookie, 'sec-fetch-site': 'cross-site' },
    });
    t.equal(page.statusCode, 200, 'a cross-site GET (a link, an image) signs nobody out');
    t.notOk(page.headers['set-cookie'], 'and clears no cookie');
    t.match(
      String(page.headers['content-security-policy']),
      /default-src 'none'.*form-action 'self' http:\/\/localhost:4400/,
    );
    const html = await page.body.text();
    t.match(html, /<form method="post" action="\/_gate\/signout"/);
    const csrf = /name="csrf" value="([^"]+)"/.exec(html)![1]!;
    t.match(html, /name="rd" value="\/later"/);

    const form = { 'content-type': 'application/x-www-form-urlencoded', cookie };
    const forged = await request(`${gw.url}/_gate/signout`, { method: 'POST', headers: form, body: 'rd=/' });
    t.equal(forged.statusCode, 403, 'a cross-site POST without the token');
    t.match(await forged.body.json(), { reason: 'origin_mismatch' });
    const other = await gw.sessionCookie({ idToken: 'other' });
    t.equal(
      (
        await request(`${gw.url}/_gate/signout`, {
          method: 'POST',
          headers: { ...form, cookie: other },
          body: `csrf=${csrf}`,
        })
      ).statusCode,
      403,
      "another session's token",
    );
    t.equal(
      (await request(`${gw.url}/_gate/signout`, { method: 'POST', headers: form, body: `csrf=${'x'.repeat(5000)}` }))
        .statusCode,
      413,
      'a large body',
    );

    const res = await request(`${gw.url}/_gate/signout`, {
      method: 'POST',
      headers: form,
      body: `csrf=${csrf}&rd=/later`,
    });
    t.equal(res.statusCode, 302);
    const location = new URL(String(res.headers['location']));
    t.equal(`${location.origin}${location.pathname}`, `${CONTROL_PLANE}/auth/logout`);
    t.equal(location.searchParams.get('id_token_hint'), 'id.token.value');
    t.equal(location.searchParams.get('post_logout_redirect_uri'), `${gw.url}/`);
    t.ok([res.headers['set-cookie']].flat().some((line) => /^kp_gate_session=; .*Max-Age=0/.test(String(line))));
    const setCookies = (answer: typeof res) => [answer.headers['set-cookie']].flat().map(String);
    const marker = setCookies(res).find((line) => /^kp_gate_signed_out=1; /.test(line));
    t.match(marker, /HttpOnly; SameSite=Lax; Max-Age=600/, 'the sign-out leaves a short-lived marker');
    const back = await request(`${gw.url}/`, { headers: { ...HTML, cookie: 'kp_gate_signed_out=1' } });
    t.equal(back.statusCode, 200, 'no new sign-in started by itself');
    const signedOut = await back.body.text();
    t.match(signedOut, `You are signed out of ${new URL(gw.url).host}.`);
    t.match(signedOut, '<a href="/_gate/signin?rd=%2F" data-action="sign-in-again">Sign in again</a>');
    t.ok(
      setCookies(back).some((line) => /^kp_gate_signed_out=; .*Max-Age=0/.test(line)),
      'the marker is spent',
    );
    const later = await request(`${gw.url}/`, { headers: HTML });
    t.equal(later.statusCode, 302, 'without the marker a page asks to sign in, as before');
    const anonymous = await request(`${gw.url}/_gate/signout?rd=//evil.example`);
    t.equal(anonymous.headers['location'], `${gw.url}/`, 'no open redirect on sign-out');
    t.ok(
      setCookies(anonymous).some((line) => /^kp_gate_signed_out=1; /.test(line)),
      'signed out already: said too',
    );
  },
);

t.test('a passkey session on a sensitive route is sent to step-up', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY });
  const cookie = await gw.sessionCookie({ assurance: 'passkey' });
  const browser = await request(`${gw.url}/admin/users`, { headers: { ...HTML, cookie } });
  const stepUp = await signInRedirect(gw.running.gateway, browser);
  t.match(stepUp, { returnTo: '/admin/users', acr: 'sensitive' });
  t.equal(stepUp?.authorize.searchParams.get('max_age'), '0', 'a fresh authentication (RFC 9470 §4)');
  t.notOk(
    [browser.headers['set-cookie']].flat().some((line) => String(line).startsWith('kp_gate_session=;')),
    'the session stays until the step-up replaces it',
  );
  const xhr = await request(`${gw.url}/admin/users`, { headers: { cookie } });
  t.equal(xhr.statusCode, 403);
  t.match(await xhr.body.json(), { reason: 'insufficient_assurance', acr_values: 'sensitive' });
  const strong = await request(`${gw.url}/admin/users`, {
    headers: { cookie: await gw.sessionCookie({ assurance: 'sensitive' }) },
  });
  t.equal(strong.statusCode, 200);
  t.equal(upstream.last().headers['x-auth-assurance'], 'sensitive');
});

t.test('bearer tokens are verified locally: issuer, audience, expiry, scopes, assurance', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY });
  const good = await signAccessToken({ audience: gw.url });
  const ok = await request(`${gw.url}/api/items`, { headers: { authorization: `Bearer ${good}` } });
  t.equal(ok.statusCode, 200);
  t.equal(upstream.last().headers['x-auth-subject'], 'user-1');
  t.equal(upstream.last().headers['authorization'], `Bearer ${good}`, 'the token itself goes on to the app');

  const cases: Array<[string, string, number, string]> = [
    ['another audience', await signAccessToken({ audience: 'https://elsewhere.example' }), 401, 'invalid_token'],
    [
      'another issuer',
      await signAccessToken({ audience: gw.url, issuer: 'https://evil.example' }),
      401,
      'invalid_token',
    ],
    ['expired', await signAccessToken({ audience: gw.url, expiresIn: -10 }), 401, 'invalid_token'],
    ['garbage', 'not.a.token', 401, 'invalid_token'],
    ['missing scope', await signAccessToken({ audience: gw.url, scope: 'write' }), 403, 'insufficient_scope'],
  ];
  for (const [name, token, status, reason] of cases) {
    const res = await request(`${gw.url}/api/items`, { headers: { authorization: `Bearer ${token}`, ...HTML } });
    t.equal(res.statusCode, status, name);
    t.match(await res.body.json(), { ok: false, reason }, name);
    t.match(String(res.headers['www-authenticate']), new RegExp(`^Bearer realm="[^"]+", error="${reason}"`), name);
    t.notOk(res.headers['location'], 'never a redirect');
  }
  const weak = await request(`${gw.url}/admin/x`, {
    headers: { authorization: `Bearer ${await signAccessToken({ audience: gw.url, assurance: 'passkey' })}` },
  });
  t.equal(weak.statusCode, 401);
  t.match(await weak.body.json(), { reason: 'insufficient_user_authentication', acr_values: 'sensitive' });
  t.match(
    String(weak.headers['www-authenticate']),
    /error="insufficient_user_authentication".*acr_values="sensitive"/,
    'RFC 9470 challenge',
  );
});

t.test('a token verified once is reused only until its exp, and never turns a refusal into a pass', async (t) => {
  const upstream = await startUpstream(t);
  let clock = Date.now();
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, deps: { now: () => clock } });
  const token = await signAccessToken({ audience: gw.url, expiresIn: 120 });
  const call = async () => {
    const res = await request(`${gw.url}/api/items`, { headers: { authorization: `Bearer ${token}` } });
    await res.body.text();
    return res.statusCode;
  };
  t.equal(await call(), 200);
  t.equal(await call(), 200, 'from the cache');
  clock += 121_000;
  t.equal(await call(), 401, 'past its exp the cached token is refused like any other');
  const bound = await signAccessToken({ audience: gw.url, jkt: 'some-thumbprint' });
  for (let i = 0; i < 2; i++) {
    const res = await request(`${gw.url}/api/items`, { headers: { authorization: `Bearer ${bound}` } });
    t.equal(res.statusCode, 401, 'a DPoP-bound token as Bearer is refused every time, cached or not');
    await res.body.text();
  }
});

t.test(
  'DPoP at the edge: accepted once, replay refused on another replica sharing state, wrong URL or method refused, missing proof refused',
  async (t) => {
    const upstream = await startUpstream(t);
    const state = new MemorySharedState();
    t.teardown(() => state.close());
    const publicUrl = 'http://gate.example.test';
    const overrides = { publicUrl };
    // Two replicas answer for the same public URL and share one replay cache.
    const a = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, overrides, state });
    const b = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, overrides, state });
    const client = await dpopClient();
    const token = await signAccessToken({ audience: publicUrl, principal: 'agent', jkt: client.jkt });
    const htu = `${publicUrl}/agents/run`;

    const proof = await client.proof('POST', htu, token);
    const first = await request(`${a.local}/agents/run`, {
      method: 'POST',
      headers: { authorization: `DPoP ${token}`, dpop: proof },
      body: '{}',
    });
    t.equal(first.statusCode, 200);
    t.equal(upstream.last().headers['x-auth-principal-type'], 'agent');

    const replay = await request(`${b.local}/agents/run`, {
      method: 'POST',
      headers: { authorization: `DPoP ${token}`, dpop: proof },
      body: '{}',
    });
    t.equal(replay.statusCode, 401);
    t.match(await replay.body.json(), { reason: 'invalid_dpop_proof' });
    t.match(String(replay.headers['www-authenticate']), /^DPoP algs="ES256 EdDSA", error="invalid_dpop_proof"/);

    const refusals: Array<[string, Record<string, string>, string]> = [
      [
        'a proof for another URL',
        { authorization: `DPoP ${token}`, dpop: await client.proof('POST', `${publicUrl}/agents/other`, token) },
        'invalid_dpop_proof',
      ],
      [
        'a proof for another method',
        { authorization: `DPoP ${token}`, dpop: await client.proof('GET', htu, token) },
        'invalid_dpop_proof',
      ],
      ['a missing proof', { authorization: `DPoP ${token}` }, 'invalid_dpop_proof'],
      ['a DPoP-bound token as Bearer', { authorization: `Bearer ${token}` }, 'invalid_token'],
      [
        'a Bearer token on a dpop: required route',
        { authorization: `Bearer ${await signAccessToken({ audience: publicUrl, principal: 'agent' })}` },
        'dpop_required',
      ],
    ];
    for (const [name, headers, reason] of refusals) {
      const res = await request(`${b.local}/agents/run`, { method: 'POST', headers, body: '{}' });
      t.equal(res.statusCode, 401, name);
      t.match(await res.body.json(), { reason }, name);
      // RFC 9449 §7.1: a refusal that a DPoP proof would cure carries a DPoP challenge.
      if (reason === 'dpop_required')
        t.match(String(res.headers['www-authenticate']), /^DPoP algs="ES256 EdDSA"/, `${name}: a DPoP challenge`);
    }
    const human = await signAccessToken({ audience: publicUrl, jkt: client.jkt });
    const wrongPrincipal = await request(`${b.local}/agents/run`, {
      method: 'POST',
      headers: { authorization: `DPoP ${human}`, dpop: await client.proof('POST', htu, human) },
      body: '{}',
    });
    t.equal(wrongPrincipal.statusCode, 403);
    t.match(await wrongPrincipal.body.json(), { reason: 'principal_not_allowed' });
  },
);

t.test('a page load by the wrong kind of principal is a 403, never a sign-in redirect', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, {
    upstream: upstream.url,
    policy: {
      ...POLICY,
      routes: POLICY.routes.map((route) =>
        route.path === '/agents' ? { path: '/agents', principals: ['agent' as const] } : route,
      ),
    },
  });
  const res = await request(`${gw.url}/agents/run`, { headers: { ...HTML, cookie: await gw.sessionCookie() } });
  t.equal(res.statusCode, 403);
  t.match(await res.body.json(), { ok: false, reason: 'principal_not_allowed' });
  t.notOk(res.headers['location'], 'signing in again would not make a human an agent');
  t.equal(upstream.seen.length, 0);
});

t.test('forward auth answers 2xx with identity, 401, 403 or 302 when asked', async (t) => {
  const gw = await startTestGateway(t, { policy: POLICY });
  const cookie = await gw.sessionCookie({ assurance: 'passkey' });
  const ok = await request(`${gw.url}/_gate/auth`, {
    headers: { cookie, 'x-forwarded-uri': '/app/x', 'x-forwarded-method': 'GET', 'x-auth-subject': 'evil' },
  });
  t.equal(ok.statusCode, 200);
  t.equal(ok.headers['x-auth-subject'], 'user-1');
  t.ok(ok.headers['x-auth-assertion']);
  const anonymous = await request(`${gw.url}/_gate/auth`, { headers: { ...HTML, 'x-original-uri': '/app/x' } });
  t.equal(anonymous.statusCode, 401, 'nginx gets 401');
  const weak = await request(`${gw.url}/_gate/auth`, { headers: { ...HTML, cookie, 'x-forwarded-uri': '/admin' } });
  t.equal(weak.statusCode, 403, 'signed in but too weak: 403, no loop');
  const asked = await request(`${gw.url}/_gate/auth?redirect=1`, {
    headers: { ...HTML, 'x-forwarded-uri': '/app/x?y=1' },
  });
  t.match(await signInRedirect(gw.running.gateway, asked), { returnTo: '/app/x?y=1' });
  const fetched = await request(`${gw.url}/_gate/auth?redirect=1`, {
    headers: { accept: 'application/json', 'x-forwarded-uri': '/app/x' },
  });
  t.equal(fetched.statusCode, 401, 'even when the proxy asks for redirects, a fetch or API call gets 401');
  const posted = await request(`${gw.url}/_gate/auth?redirect=1`, {
    headers: { ...HTML, 'x-forwarded-uri': '/app/x', 'x-forwarded-method': 'POST' },
  });
  t.equal(posted.statusCode, 401, 'and so does a form post');
  const stepUp = await request(`${gw.url}/_gate/auth?redirect=1`, {
    headers: { ...HTML, cookie, 'x-forwarded-uri': '/admin' },
  });
  t.equal(stepUp.statusCode, 302);
  t.match(String(stepUp.headers['location']), /acr_values=sensitive/);
  const publicRoute = await request(`${gw.url}/_gate/auth`, { headers: { 'x-forwarded-uri': '/public/x' } });
  t.equal(publicRoute.statusCode, 200);
  const bad = await request(`${gw.url}/_gate/auth`, { headers: { cookie, 'x-forwarded-uri': '/public/%2e%2e/admin' } });
  t.equal(bad.statusCode, 400);

  const untrusted = await startTestGateway(t, { policy: POLICY, overrides: { trustedProxies: ['10.0.0.0/8'] } });
  const spoofed = await request(`${untrusted.url}/_gate/auth`, { headers: { 'x-forwarded-uri': '/public/x' } });
  t.equal(spoofed.statusCode, 401, "an untrusted caller's original URI is ignored (evaluated as /)");
});

t.test('observe passes through and counts; canary enforces for a stable share', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: { ...POLICY, mode: 'observe' } });
  const res = await request(`${gw.url}/admin/x`, {
    headers: { cookie: await gw.sessionCookie({ assurance: 'email' }) },
  });
  t.equal(res.statusCode, 200);
  t.equal(upstream.last().headers['x-auth-assurance'], 'email');
  t.equal(
    (await request(`${gw.url}/app`, { headers: HTML })).statusCode,
    200,
    'an anonymous caller passes in observe mode',
  );
  const badToken = await request(`${gw.url}/api/x`, {
    headers: { authorization: 'Bearer not.a.token', 'x-auth-subject': 'evil' },
  });
  t.equal(badToken.statusCode, 200, 'an invalid token is observed, not refused');
  t.notOk(upstream.last().headers['x-auth-subject'], 'and passes without identity');
  const metrics = await (await request(`${gw.url}/metrics`)).body.text();
  t.match(metrics, /kp_gate_observed_refusals_total\{reason="invalid_token"\} 1/);
  t.match(metrics, /kp_gate_observed_refusals_total\{reason="insufficient_user_authentication"\} 1/);
  t.match(metrics, /kp_gate_observed_refusals_total\{reason="unauthorized"\} 1/);

  await gw.configure({ ...POLICY, mode: 'canary', canary_percent: 50 });
  const outcomes = new Map<number, number>();
  for (let i = 0; i < 40; i++) {
    const cookie = await gw.sessionCookie({ sid: `session-${i}`, assurance: 'email' });
    const first = (await request(`${gw.url}/admin/x`, { headers: { cookie } })).statusCode;
    const again = (await request(`${gw.url}/admin/x`, { headers: { cookie } })).statusCode;
    t.equal(again, first, 'a session stays on its side of the canary');
    outcomes.set(first, (outcomes.get(first) ?? 0) + 1);
  }
  t.ok((outcomes.get(200) ?? 0) > 0 && (outcomes.get(403) ?? 0) > 0, 'some sessions enforced, some observed');

  await gw.configure({ ...POLICY, mode: 'enforce' });
  t.equal(
    (await request(`${gw.url}/admin/x`, { headers: { cookie: await gw.sessionCookie({ assurance: 'email' }) } }))
      .statusCode,
    403,
  );
});
