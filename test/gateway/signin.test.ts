import t from 'tap';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { loadControlPlaneConfig } from '../../config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/src/server.js';
import { createTokenClient, type TokenClient } from '../../gateway/src/token-client.js';
import type { GatewayPolicy } from '../../lib/gateway/policy.js';
import { parseCookieHeader, readSessionCookies, type GateSession } from '../../lib/gateway/session-cookie.js';
import { forgetSingleFlight } from '../../lib/gateway/single-flight.js';
import { findFreePort } from '../../lib/runtime/listen.js';
import { tempDir, TEST_MASTER_KEY } from '../helpers/build.js';
import { SoftAuthenticator } from '../helpers/soft-authenticator.js';
import { startTestGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';

/**
 * The browser sign-in at the edge-gate against a REAL control plane on a free port: the gateway
 * is a confidential client registered with the admin token, the user signs up with a software
 * passkey over HTTP, and every redirect is followed by hand with two cookie jars (one per origin).
 */
const ADMIN = 'gateway-signin-admin-token-0123456789abcdef0123';
const HTML = { accept: 'text/html' };
const POLICY: GatewayPolicy = { mode: 'enforce', routes: [{ path: '/public', public: true }, { path: '/admin', min_assurance: 'sensitive' }] };

class Jar {
  readonly cookies = new Map<string, string>();
  absorb(setCookie: string | string[] | undefined): void {
    for (const line of [setCookie ?? []].flat()) {
      const pair = line.split(';')[0]!;
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /max-age=0\b/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers });
  const body = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body, location: typeof res.headers['location'] === 'string' ? res.headers['location'] : undefined, setCookie: res.headers['set-cookie'] as string | string[] | undefined };
}

async function startCp(t: Tap): Promise<RunningControlPlane> {
  const config = loadControlPlaneConfig({ env: {}, overrides: { dataDir: tempDir(t), host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn', adminToken: ADMIN } });
  const server = await startControlPlane(config, { logStream: new Writable({ write(_c, _e, done) { done(); } }) });
  t.teardown(() => server.close());
  return server;
}
type Tap = Parameters<typeof tempDir>[0];

/** Signs up with a software passkey and signs in again; the jar holds the control plane's session. */
async function passkeyUser(base: string, username: string): Promise<{ jar: Jar; identityId: string }> {
  const jar = new Jar();
  const authenticator = new SoftAuthenticator(base);
  const post = async (path: string, body: unknown) => {
    const res = await request(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', origin: base, cookie: jar.header() }, body: JSON.stringify(body) });
    jar.absorb(res.headers['set-cookie'] as string[] | undefined);
    const json = await res.body.json() as Record<string, any>;
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  const begin = await post('/auth/registration-options', { username });
  const created = await post('/auth/registration-verify', { user: username, response: authenticator.create(begin.options), signupToken: begin.signupToken });
  const options = await (await request(`${base}/auth/assertion-options`)).body.json() as Record<string, any>;
  await post('/auth/assertion-verify', { response: authenticator.get(options.options) });
  return { jar, identityId: created.identityId };
}

interface World {
  cp: RunningControlPlane;
  gw: TestGateway;
  upstream: Upstream;
  user: { jar: Jar; identityId: string };
  refreshes: { count: number };
  /** Milliseconds added to the gateway's clock. */
  clock: { offset: number };
}

async function world(t: Tap, policy: GatewayPolicy = POLICY): Promise<World> {
  const cp = await startCp(t);
  const port = await findFreePort();
  const gatewayUrl = `http://localhost:${port}`;
  const reg = await request(`${cp.url}/register`, {
    method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Edge gate', redirect_uris: [`${gatewayUrl}/_gate/callback`], post_logout_redirect_uris: [`${gatewayUrl}/`],
      grant_types: ['authorization_code', 'refresh_token'], scope: 'openid email offline_access', token_endpoint_auth_method: 'client_secret_basic',
    }),
  });
  const client = await reg.body.json() as { client_id: string; client_secret: string };
  if (reg.statusCode !== 201) throw new Error(`register: ${JSON.stringify(client)}`);
  const refreshes = { count: 0 };
  const real = createTokenClient({ controlPlane: cp.url, clientId: client.client_id, clientSecret: client.client_secret });
  // The real client, counting the refreshes that reach the control plane.
  const tokenClient: TokenClient = { exchangeCode: real.exchangeCode, refresh: (token) => { refreshes.count++; return real.refresh(token); } };
  const clock = { offset: 0 };
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, {
    upstream: upstream.url, remoteKeys: true,
    overrides: { port, controlPlane: cp.url, clientId: client.client_id, clientSecret: client.client_secret },
    deps: { tokenClient, now: () => Date.now() + clock.offset },
  });
  // The control plane's GET /gateway/config is another piece: the policy comes from the test.
  await gw.running.configPull?.stop();
  await gw.configure(policy, 1000);
  const user = await passkeyUser(cp.url, `gate-${port}`);
  return { cp, gw, upstream, user, refreshes, clock };
}

/** From the gateway's sign-in redirect to the callback URL the control plane sends the browser to. */
async function authorizeAt(w: World, authorizeUrl: string): Promise<URL> {
  let res = await get(authorizeUrl, { cookie: w.user.jar.header() });
  if (res.status === 200 && res.body.includes('data-action="continue"')) {
    const form = new URLSearchParams();
    for (const m of res.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      form.append(m[1]!, m[2]!.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&'));
    }
    const posted = await request(`${w.cp.url}/auth/authorize`, { method: 'POST', headers: { cookie: w.user.jar.header(), origin: w.cp.url, 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
    await posted.body.dump();
    res = { ...res, status: posted.statusCode, location: posted.headers['location'] as string | undefined };
  }
  if (!res.location?.startsWith(`${w.gw.url}/_gate/callback`)) throw new Error(`authorize answered ${res.status} ${res.location ?? res.body.slice(0, 300)}`);
  return new URL(res.location);
}

/** Anonymous navigation → sign-in → authorize → callback; returns the browser's gateway jar and the callback answer. */
async function signIn(w: World, path = '/app/page?x=1'): Promise<{ jar: Jar; callback: URL; loginCookie: string; landed: Awaited<ReturnType<typeof get>> }> {
  const jar = new Jar();
  // The gateway sends the browser straight to the control plane's authorize, setting its login cookie.
  const signin = await get(`${w.gw.url}${path}`, HTML);
  jar.absorb(signin.setCookie);
  const loginCookie = jar.header();
  const callback = await authorizeAt(w, signin.location!);
  const landed = await get(callback.toString(), { cookie: jar.header() });
  jar.absorb(landed.setCookie);
  return { jar, callback, loginCookie, landed };
}

async function sessionIn(w: World, jar: Jar): Promise<GateSession> {
  const session = await readSessionCookies(parseCookieHeader(jar.header()), { keys: w.gw.running.gateway.cookieKeys, now: Date.now(), secure: false });
  if (!session) throw new Error('no session in the jar');
  return session;
}

t.test('an anonymous navigation signs in at the control plane and lands where it started, with identity upstream', async (t) => {
  const w = await world(t);
  const signin = await get(`${w.gw.url}/app/page?x=1`, HTML);
  t.equal(signin.status, 302, 'straight to the control plane (CONTRACT)');
  const authorize = new URL(signin.location!);
  t.equal(`${authorize.origin}${authorize.pathname}`, `${w.cp.url}/auth/authorize`);
  t.equal(authorize.searchParams.get('scope'), 'openid email offline_access');

  const { jar, callback, landed } = await signIn(w);
  t.equal(callback.searchParams.get('iss'), w.cp.url, 'the control plane names itself (RFC 9207)');
  t.equal(landed.status, 302, landed.body);
  t.equal(landed.location, `${w.gw.url}/app/page?x=1`, 'back where the browser started');
  const lines = [landed.setCookie ?? []].flat();
  t.ok(lines.some((line) => line.startsWith('kp_gate_session') && /HttpOnly; SameSite=Lax/.test(line)), 'a session cookie');
  t.ok(lines.some((line) => line.startsWith(`kp_gate_login.${callback.searchParams.get('state')}=;`) && /Max-Age=0/.test(line)), 'the login cookie is cleared');
  t.notOk([...jar.cookies.keys()].some((name) => name.startsWith('kp_gate_login')));

  const session = await sessionIn(w, jar);
  t.match(session, { sub: w.user.identityId, principalType: 'human', assurance: 'passkey', scopes: ['openid', 'email', 'offline_access'] });
  t.ok(session.accessToken && session.refreshToken && session.idToken && session.accessTokenExpiresAt && session.authTime, 'the control plane tokens are kept in the cookie');

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
  const out = await get(`${w.gw.url}/_gate/signout`, { cookie: jar.header() });
  const logout = new URL(out.location!);
  t.equal(`${logout.origin}${logout.pathname}`, `${w.cp.url}/auth/logout`);
  t.equal(logout.searchParams.get('id_token_hint'), session.idToken);
  t.equal(logout.searchParams.get('post_logout_redirect_uri'), `${w.gw.url}/`);

  const logged = w.gw.logs.join('');
  t.match(logged, /"event":"gateway\.signed_in"/, 'the gateway logged this sign-in, so the checks below look at real lines');
  const secrets = { code: callback.searchParams.get('code')!, accessToken: session.accessToken!, refreshToken: session.refreshToken!, idToken: session.idToken!, cookie: jar.header() };
  for (const [name, value] of Object.entries(secrets)) t.notOk(logged.includes(value), `the gateway's logs never hold the ${name}`);
});

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
  t.ok([mixUp.setCookie ?? []].flat().some((line) => /^kp_gate_login\.[^=]+=;/.test(line)), 'and the login is over');
  const declined = await get(`${w.gw.url}/_gate/callback?${new URLSearchParams({ state: good.searchParams.get('state')!, error: 'access_denied', iss: w.cp.url })}`, { cookie: fresh.header() });
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
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => get(`${w.gw.url}/app/${i}`, { accept: i % 2 ? 'application/json' : 'text/html', cookie: jar.header() })));
  t.equal(w.refreshes.count, 1, 'exactly one refresh reached the control plane');
  t.same(answers.map((a) => a.status), Array(20).fill(200), 'nobody was signed out');
  const cookies = answers.map((a) => [a.setCookie ?? []].flat().find((line) => line.startsWith('kp_gate_session')));
  t.ok(cookies.every((line) => line !== undefined && line === cookies[0]), 'every answer carries the same new cookie');
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
  const live = await createTokenClient({ controlPlane: w.cp.url, clientId: config.clientId!, clientSecret: config.clientSecret! }).refresh(after.refreshToken!);
  t.ok(live.accessToken);
});

t.test('behind forward auth a browser that never receives the renewed cookie moves on with its old one, until it signs out', async (t) => {
  const w = await world(t);
  const { jar } = await signIn(w);
  const before = await sessionIn(w, jar);
  // The proxy in front does not relay Set-Cookie from /_gate/auth: the jar is never updated.
  const auth = () => get(`${w.gw.url}/_gate/auth`, { cookie: jar.header(), 'x-forwarded-uri': '/app/x', 'x-forwarded-method': 'GET' });
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
  await get(`${w.gw.url}/_gate/signout`, { cookie: renewed.header() });
  await forgetSingleFlight(w.gw.running.gateway.state, `refresh:${before.sid}:${before.accessTokenExpiresAt}`);
  const copied = await auth();
  t.equal(copied.status, 401, 'the old refresh token is spent: the control plane refuses it and the session is over');
});

t.test('a refused refresh ends the session: browsers go to sign-in, API callers get 401', async (t) => {
  const w = await world(t);
  const { jar } = await signIn(w);
  const session = await sessionIn(w, jar);
  // Someone else spends the refresh token first: the control plane revokes the family on reuse.
  const client = w.gw.running.gateway.config;
  const spent = await createTokenClient({ controlPlane: w.cp.url, clientId: client.clientId!, clientSecret: client.clientSecret! }).refresh(session.refreshToken!);
  t.ok(spent.refreshToken);
  w.clock.offset = session.accessTokenExpiresAt! * 1000 - Date.now() + 1_000;
  const browser = await get(`${w.gw.url}/app/page`, { ...HTML, cookie: jar.header() });
  t.equal(browser.status, 302);
  t.match(browser.location, `${w.cp.url}/auth/authorize?`, 'sent to sign in again');
  t.ok([browser.setCookie ?? []].flat().some((line) => /^kp_gate_session=;.*Max-Age=0/.test(line)), 'the session cookie is cleared');
  const xhr = await get(`${w.gw.url}/app/data`, { accept: 'application/json', cookie: jar.header() });
  t.equal(xhr.status, 401);
  t.match(JSON.parse(xhr.body), { reason: 'unauthorized' });
  t.equal(w.upstream.seen.length, 0);
  t.match(await (await fetch(`${w.gw.url}/metrics`)).text(), /kp_gate_session_refreshes_total\{outcome="signed_out"\} 2\n/, "both requests with the dead cookie were signed out");
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
  t.notOk([signin.setCookie ?? []].flat().some((line) => line.startsWith('kp_gate_session')), 'the session stays until the step-up replaces it');
  const xhr = await get(`${w.gw.url}/admin/users`, { accept: 'application/json', cookie: jar.header() });
  t.equal(xhr.status, 403);
  t.match(JSON.parse(xhr.body), { reason: 'insufficient_assurance', acr_values: 'sensitive' });
});
