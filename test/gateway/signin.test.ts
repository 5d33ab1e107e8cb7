import t from 'tap';
import { createTokenClient } from '../../gateway/src/token-client.js';
import { forgetSingleFlight } from '#lib/gateway-protocol/single-flight.js';
import { HTML, Jar, authorizeAt, get, sessionIn, signIn, signOut, world } from './real-world.js';

t.test(
  'an anonymous navigation signs in at the control plane and lands where it started, with identity upstream',
  async (t) => {
    const w = await world(t);
    const signin = await get(`${w.gw.url}/app/page?x=1`, HTML);
    t.equal(signin.status, 302, 'straight to the control plane');
    const authorize = new URL(signin.location!);
    t.equal(`${authorize.origin}${authorize.pathname}`, `${w.cp.url}/auth/authorize`);
    t.equal(authorize.searchParams.get('scope'), 'openid email profile orgs groups offline_access');

    const { jar, callback, landed } = await signIn(w);
    t.equal(callback.searchParams.get('iss'), w.cp.url, 'the control plane names itself (RFC 9207)');
    t.equal(landed.status, 302, landed.body);
    t.equal(landed.location, `${w.gw.url}/app/page?x=1`, 'back where the browser started');
    const lines = [landed.setCookie ?? []].flat();
    t.ok(
      lines.some((line) => line.startsWith('kp_gate_session') && /HttpOnly; SameSite=Lax/.test(line)),
      'a session cookie',
    );
    t.ok(
      lines.some(
        (line) => line.startsWith(`kp_gate_login.${callback.searchParams.get('state')}=;`) && /Max-Age=0/.test(line),
      ),
      'the login cookie is cleared',
    );
    t.notOk([...jar.cookies.keys()].some((name) => name.startsWith('kp_gate_login')));

    const session = await sessionIn(w, jar);
    t.match(session, {
      sub: w.user.identityId,
      principalType: 'human',
      assurance: 'passkey',
      scopes: ['openid', 'email', 'offline_access'],
    });
    t.ok(
      session.accessToken &&
        session.refreshToken &&
        session.idToken &&
        session.accessTokenExpiresAt &&
        session.authTime,
      'the control plane tokens are kept in the cookie',
    );

    const page = await get(landed.location!, { ...HTML, cookie: jar.header() });
    t.equal(page.status, 200, page.body);
    const seen = w.upstream.last();
    t.equal(seen.url, '/app/page?x=1');
    t.equal(seen.headers['x-auth-subject'], w.user.identityId);
    t.equal(seen.headers['x-auth-principal-type'], 'human');
    t.equal(seen.headers['x-auth-assurance'], 'passkey');
    t.ok(seen.headers['x-auth-assertion']);
    t.notOk(String(seen.headers['cookie'] ?? '').includes('kp_gate'), 'the session cookie stays at the edge');

    // Sign-out sends the real ID token as id_token_hint.
    const out = await signOut(w, jar);
    const logout = new URL(out.location!);
    t.equal(`${logout.origin}${logout.pathname}`, `${w.cp.url}/auth/logout`);
    t.equal(logout.searchParams.get('id_token_hint'), session.idToken);
    t.equal(logout.searchParams.get('post_logout_redirect_uri'), `${w.gw.url}/`);

    const logged = w.gw.logs.join('');
    t.match(
      logged,
      /"event":"gateway\.signed_in"/,
      'the gateway logged this sign-in, so the checks below look at real lines',
    );
    const secrets = {
      code: callback.searchParams.get('code')!,
      accessToken: session.accessToken!,
      refreshToken: session.refreshToken!,
      idToken: session.idToken!,
      cookie: jar.header(),
    };
    for (const [name, value] of Object.entries(secrets))
      t.notOk(logged.includes(value), `the gateway's logs never hold the ${name}`);
  },
);

t.test('refuses a replayed callback, another state, a missing login cookie and another issuer', async (t) => {
  const w = await world(t);
  const { jar, callback, loginCookie, landed } = await signIn(w);
  t.equal(landed.status, 302);

  const replay = await get(callback.toString(), { cookie: jar.header() });
  t.equal(replay.status, 400, 'the login cookie went with the first use');
  t.match(JSON.parse(replay.body), { ok: false, reason: 'sign_in_expired' });
  const replayWithCookie = await get(callback.toString(), { cookie: loginCookie });
  t.equal(replayWithCookie.status, 400, 'a copied login cookie meets a spent code');
  t.match(JSON.parse(replayWithCookie.body), { reason: 'invalid_grant' });
  t.equal(w.upstream.seen.length, 0);

  // A fresh login whose callback is tampered with.
  const fresh = new Jar();
  const signin = await get(`${w.gw.url}/_gate/signin?rd=/app`);
  fresh.absorb(signin.setCookie);
  const good = await authorizeAt(w, signin.location!);
  const otherState = new URL(good);
  otherState.searchParams.set('state', 'A'.repeat(22));
  const mismatch = await get(otherState.toString(), { cookie: fresh.header() });
  t.equal(mismatch.status, 400);
  t.match(JSON.parse(mismatch.body), { reason: 'sign_in_expired' });
  const noCookie = await get(good.toString());
  t.equal(noCookie.status, 400);
  t.match(JSON.parse(noCookie.body), { reason: 'sign_in_expired' });
  const wrongIss = new URL(good);
  wrongIss.searchParams.set('iss', 'https://evil.example');
  const mixUp = await get(wrongIss.toString(), { cookie: fresh.header() });
  t.equal(mixUp.status, 400);
  t.match(JSON.parse(mixUp.body), { reason: 'issuer_mismatch' });
  t.ok(
    [mixUp.setCookie ?? []].flat().some((line) => /^kp_gate_login\.[^=]+=;/.test(line)),
    'and the login is over',
  );
  const declined = await get(
    `${w.gw.url}/_gate/callback?${new URLSearchParams({ state: good.searchParams.get('state')!, error: 'access_denied', iss: w.cp.url })}`,
    { cookie: fresh.header() },
  );
  t.equal(declined.status, 403, 'a declined sign-in is an answer, not a loop');
  t.match(JSON.parse(declined.body), { reason: 'sign_in_refused', error: 'access_denied' });
  t.notOk(declined.location);
});

t.test('20 concurrent requests with an expired access token share one refresh and none is signed out', async (t) => {
  const w = await world(t);
  const { jar } = await signIn(w);
  const before = await sessionIn(w, jar);
  // Inside the 30 s skew before expiry.
  w.clock.offset = before.accessTokenExpiresAt! * 1000 - 10_000 - Date.now();
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      get(`${w.gw.url}/app/${i}`, { accept: i % 2 ? 'application/json' : 'text/html', cookie: jar.header() }),
    ),
  );
  t.equal(w.refreshes.count, 1, 'exactly one refresh reached the control plane');
  t.same(
    answers.map((a) => a.status),
    Array(20).fill(200),
    'nobody was signed out',
  );
  const cookies = answers.map((a) => [a.setCookie ?? []].flat().find((line) => line.startsWith('kp_gate_session')));
  t.ok(
    cookies.every((line) => line !== undefined && line === cookies[0]),
    'every answer carries the same new cookie',
  );
  const next = new Jar();
  next.absorb(answers[0]!.setCookie);
  const after = await sessionIn(w, next);
  t.equal(after.sid, before.sid, 'the same session');
  t.not(after.refreshToken, before.refreshToken, 'with the rotated refresh token');
  t.ok(after.accessTokenExpiresAt! > before.accessTokenExpiresAt!);
  t.ok(w.upstream.seen.slice(-20).every((seen) => seen.headers['x-auth-subject'] === w.user.identityId));
  const metrics = await (await fetch(`${w.gw.url}/metrics`)).text();
  t.match(metrics, /kp_gate_session_refreshes_total\{outcome="refreshed"\} 1\n/, 'one request refreshed');
  t.match(metrics, /kp_gate_session_refreshes_total\{outcome="joined"\} 19\n/, 'nineteen took its result');

  // The new session works on; a straggler with the old cookie gets the new one, not a second refresh.
  const again = await get(`${w.gw.url}/app/again`, { cookie: next.header() });
  t.equal(again.status, 200);
  const straggler = await get(`${w.gw.url}/app/late`, { cookie: jar.header() });
  t.equal(straggler.status, 200);
  t.equal(w.refreshes.count, 1);
  t.ok([straggler.setCookie ?? []].flat().some((line) => line === cookies[0]));

  // And the family is intact at the control plane: the rotated token is the live one (a second
  // use of the old one would have revoked it).
  const config = w.gw.running.gateway.config;
  const live = await createTokenClient({
    controlPlane: w.cp.url,
    clientId: config.clientId!,
    clientSecret: config.clientSecret!,
  }).refresh(after.refreshToken!);
  t.ok(live.accessToken);
});

t.test(
  'behind forward auth a browser that never receives the renewed cookie moves on with its old one, until it signs out',
  async (t) => {
    const w = await world(t);
    const { jar } = await signIn(w);
    const before = await sessionIn(w, jar);
    // The proxy in front does not relay Set-Cookie from /_gate/auth: the jar is never updated.
    const auth = () =>
      get(`${w.gw.url}/_gate/auth`, { cookie: jar.header(), 'x-forwarded-uri': '/app/x', 'x-forwarded-method': 'GET' });
    w.clock.offset = before.accessTokenExpiresAt! * 1000 - 10_000 - Date.now();
    const first = await auth();
    t.equal(first.status, 200);
    t.equal(w.refreshes.count, 1, 'refreshed once');
    // Long after the refresh (its single-flight result is gone), the same old cookie comes back.
    await forgetSingleFlight(w.gw.running.gateway.state, `refresh:${before.sid}:${before.accessTokenExpiresAt}`);
    const later = await auth();
    t.equal(later.status, 200, 'the old cookie moves on to the renewed session');
    t.equal(w.refreshes.count, 1, 'without spending the rotated refresh token again (which would revoke the family)');
    t.equal(later.headers['x-auth-subject'], w.user.identityId);
    const renewed = new Jar();
    renewed.absorb(later.setCookie);
    const newest = await sessionIn(w, renewed);
    t.equal(newest.sid, before.sid);
    t.ok(newest.accessTokenExpiresAt! > before.accessTokenExpiresAt!, 'and is offered the renewed cookie again');

    // Signing out forgets the newest state: a copy of the old cookie cannot move on any more.
    await signOut(w, renewed);
    await forgetSingleFlight(w.gw.running.gateway.state, `refresh:${before.sid}:${before.accessTokenExpiresAt}`);
    const copied = await auth();
    t.equal(copied.status, 401, 'the old refresh token is spent: the control plane refuses it and the session is over');
  },
);

t.test('a refused refresh ends the session: browsers go to sign-in, API callers get 401', async (t) => {
  const w = await world(t);
  const { jar } = await signIn(w);
  const session = await sessionIn(w, jar);
  // Someone else spends the refresh token first: the control plane revokes the family on reuse.
  const client = w.gw.running.gateway.config;
  const spent = await createTokenClient({
    controlPlane: w.cp.url,
    clientId: client.clientId!,
    clientSecret: client.clientSecret!,
  }).refresh(session.refreshToken!);
  t.ok(spent.refreshToken);
  w.clock.offset = session.accessTokenExpiresAt! * 1000 - Date.now() + 1_000;
  const browser = await get(`${w.gw.url}/app/page`, { ...HTML, cookie: jar.header() });
  t.equal(browser.status, 302);
  t.match(browser.location, `${w.cp.url}/auth/authorize?`, 'sent to sign in again');
  t.ok(
    [browser.setCookie ?? []].flat().some((line) => /^kp_gate_session=;.*Max-Age=0/.test(line)),
    'the session cookie is cleared',
  );
  const xhr = await get(`${w.gw.url}/app/data`, { accept: 'application/json', cookie: jar.header() });
  t.equal(xhr.status, 401);
  t.match(JSON.parse(xhr.body), { reason: 'unauthorized' });
  t.equal(w.upstream.seen.length, 0);
  t.match(
    await (await fetch(`${w.gw.url}/metrics`)).text(),
    /kp_gate_session_refreshes_total\{outcome="signed_out"\} 2\n/,
    'both requests with the dead cookie were signed out',
  );
});

t.test('a passkey session on a sensitive route is sent to step up with acr_values', async (t) => {
  const w = await world(t);
  const { jar } = await signIn(w);
  const signin = await get(`${w.gw.url}/admin/users`, { ...HTML, cookie: jar.header() });
  t.equal(signin.status, 302);
  const authorize = new URL(signin.location!);
  t.equal(`${authorize.origin}${authorize.pathname}`, `${w.cp.url}/auth/authorize`);
  t.equal(authorize.searchParams.get('acr_values'), 'sensitive');
  t.equal(authorize.searchParams.get('max_age'), '0');
  t.notOk(
    [signin.setCookie ?? []].flat().some((line) => line.startsWith('kp_gate_session')),
    'the session stays until the step-up replaces it',
  );
  const xhr = await get(`${w.gw.url}/admin/users`, { accept: 'application/json', cookie: jar.header() });
  t.equal(xhr.status, 403);
  t.match(JSON.parse(xhr.body), { reason: 'insufficient_assurance', acr_values: 'sensitive' });
});
