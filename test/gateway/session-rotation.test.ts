import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { createTokenClient } from '../../gateway/src/token-client.js';
import { openSharedState } from '#lib/runtime/shared-state/index.js';
import { REDIS_URL, redisAvailability } from '../helpers/redis.js';
import { until } from '../helpers/until.js';
import { startTestGateway } from './helpers.js';
import { HTML, Jar, POLICY, authorizeAt, get, sessionIn, signIn, signOut, world, type World } from './real-world.js';

// Session rotation at the gateway (docs/gateway.md#session-rotation, ASVS 5.0 V7.2.4): a
// sign-in or step-up through the gateway gives the browser a new cookie and ends the old
// session, so a copy of the old cookie is refused (401) at every replica, never moved on.

const availability = await redisAvailability();

/** A JSON request through the gateway with only `cookie`, as an attacker holding a copied cookie would send it. */
const api = (w: World, path: string, cookie: string) =>
  get(`${w.gw.url}${path}`, { accept: 'application/json', cookie });

/** A POST at the control plane with the user's control-plane cookies, as the page's script sends it. */
async function cpPost(w: World, path: string, body: unknown): Promise<Record<string, any>> {
  const res = await request(`${w.cp.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: w.cp.url, cookie: w.user.jar.header() },
    body: JSON.stringify(body),
  });
  w.user.jar.absorb(res.headers['set-cookie'] as string[] | undefined);
  const json = (await res.body.json()) as Record<string, any>;
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`);
  return json;
}

/**
 * A page that needs `sensitive`: the gateway sends the browser to the control plane with
 * acr_values and max_age=0, the control plane to its step-up page, whose passkey ceremony
 * renews the control-plane session; authorize resumes and the gateway's callback lands.
 */
async function stepUpThroughGateway(t: Test, w: World, jar: Jar, path: string) {
  const refused = await get(`${w.gw.url}${path}`, { ...HTML, cookie: jar.header() });
  t.equal(refused.status, 302, 'sent to step up');
  jar.absorb(refused.setCookie);
  const authorize = await get(refused.location!, { ...HTML, cookie: w.user.jar.header() });
  const page = new URL(authorize.location!, w.cp.url);
  t.equal(page.pathname, '/auth/step-up', 'the control plane asks for a step-up');
  const options = await cpPost(w, '/auth/step-up/options', {});
  await cpPost(w, '/auth/step-up/verify', { response: w.user.authenticator.get(options.options) });
  const callback = await authorizeAt(w, new URL(page.searchParams.get('return')!, w.cp.url).toString());
  const landed = await get(callback.toString(), { cookie: jar.header() });
  t.equal(landed.status, 302, landed.body);
  jar.absorb(landed.setCookie);
  return landed;
}

t.test('a step-up through the gateway gives a new cookie and refuses the one from before', async (t) => {
  const w = await world(t);
  const { jar } = await signIn(w);
  const before = await sessionIn(w, jar);
  const copied = jar.header();
  const cpBefore = w.user.jar.header();
  t.equal((await api(w, '/app/data', copied)).status, 200, 'the cookie works before');

  const landed = await stepUpThroughGateway(t, w, jar, '/admin/users');
  t.equal(landed.location, `${w.gw.url}/admin/users`);
  const after = await sessionIn(w, jar);
  t.not(after.sid, before.sid, 'a new gateway session');
  t.equal(after.assurance, 'sensitive');
  t.equal(after.idpSid, before.idpSid, 'of the same control-plane session (renewed there, not ended)');
  t.equal((await api(w, '/admin/users', jar.header())).status, 200, 'the new cookie reaches the sensitive route');

  for (const path of ['/app/data', '/admin/users']) {
    const stale = await api(w, path, copied);
    t.equal(stale.status, 401, `the copied cookie is refused on ${path}`);
    t.equal(JSON.parse(stale.body).reason, 'unauthorized');
    t.notOk(stale.setCookie, 'and its answer clears nothing (the browser holds the new cookie)');
  }
  const forward = await get(`${w.gw.url}/_gate/auth`, {
    cookie: copied,
    'x-forwarded-uri': '/admin/users',
    'x-forwarded-method': 'GET',
  });
  t.equal(forward.status, 401, 'refused behind forward auth too');

  // Past the old access token's expiry the copy still does not move on or refresh.
  w.clock.offset = before.accessTokenExpiresAt! * 1000 - Date.now() + 1_000;
  const refreshes = w.refreshes.count;
  t.equal((await api(w, '/app/data', copied)).status, 401, 'still refused when its refresh would be due');
  t.equal(w.refreshes.count, refreshes, 'without a refresh');
  // Its refresh token was revoked at the control plane (RFC 7009) when the step-up replaced it.
  const config = w.gw.running.gateway.config;
  const client = createTokenClient({
    controlPlane: w.cp.url,
    clientId: config.clientId!,
    clientSecret: config.clientSecret!,
  });
  await t.rejects(client.refresh(before.refreshToken!), 'the replaced refresh token is dead');
  w.clock.offset = 0;

  // The control plane's own cookie from before the step-up is refused there too.
  const cpStale = await get(`${w.cp.url}/account?format=json`, { accept: 'application/json', cookie: cpBefore });
  t.equal(cpStale.status, 401, "the control plane's token from before the step-up is refused");
  const cpNow = await get(`${w.cp.url}/account?format=json`, {
    accept: 'application/json',
    cookie: w.user.jar.header(),
  });
  t.equal(JSON.parse(cpNow.body).sessions.length, 1, 'one control-plane session');
  t.match(w.gw.logs.join(''), /"event":"gateway\.ended_session_presented"/);
});

t.test('a new sign-in ends the session the browser had; sign-out ends it at once', async (t) => {
  const w = await world(t);
  const { jar } = await signIn(w);
  const copied = jar.header();

  // An explicit sign-in from the same browser: /_gate/signin clears the cookie, the callback ends its session.
  const start = await get(`${w.gw.url}/_gate/signin?rd=/app`, { cookie: jar.header() });
  jar.absorb(start.setCookie);
  t.notOk(jar.header().includes('kp_gate_session='), 'the old cookie is cleared from the browser');
  const callback = await authorizeAt(w, start.location!);
  jar.absorb((await get(callback.toString(), { cookie: jar.header() })).setCookie);
  t.equal((await api(w, '/app/data', jar.header())).status, 200, 'the new session works');
  t.equal((await api(w, '/app/data', copied)).status, 401, 'a copy of the old cookie is refused');

  // Sign-out: a copy of the signed-out cookie is refused at once, before any refresh is due.
  const current = jar.header();
  const out = await signOut(w, jar);
  t.equal(out.status, 302);
  t.equal((await api(w, '/app/data', current)).status, 401, 'a copy of the signed-out cookie is refused');
});

t.test(
  'replicas sharing Redis refuse a replaced cookie: announced to running ones, read by a later one',
  { skip: availability.run ? false : availability.reason },
  async (t) => {
    const prefix = `kp:gate:test:${randomUUID()}:`;
    const states = await Promise.all([1, 2, 3].map(() => openSharedState(REDIS_URL, prefix)));
    t.teardown(async () => {
      for (const state of states) await state.close();
    });
    const w = await world(t, POLICY, { state: states[0]! });
    const config = w.gw.running.gateway.config;
    const replica = async (index: number) => {
      const gateway = await startTestGateway(t, {
        upstream: w.upstream.url,
        remoteKeys: true,
        // Replicas share the cookie keys (one data dir here) and shared state.
        dataDir: w.gw.dataDir,
        state: states[index]!,
        overrides: { controlPlane: w.cp.url, clientId: config.clientId, clientSecret: config.clientSecret },
      });
      await gateway.running.configPull?.stop();
      await gateway.configure(POLICY, 1000 + index);
      return gateway;
    };
    const b = await replica(1);
    const { jar } = await signIn(w);
    const copied = jar.header();
    const atB = () => get(`${b.url}/app/data`, { accept: 'application/json', cookie: copied });
    t.equal((await atB()).status, 200, 'replica B opened (and cached) the cookie');

    await stepUpThroughGateway(t, w, jar, '/admin/users');
    // Pub/sub delivers asynchronously: B refuses as soon as the announcement arrives.
    const status = await until('replica B to refuse', async () => {
      const answer = (await atB()).status;
      return answer === 401 ? answer : undefined;
    });
    t.equal(status, 401, 'replica B refuses the copy it had cached, once announced');

    const c = await replica(2);
    const atC = await get(`${c.url}/app/data`, { accept: 'application/json', cookie: copied });
    t.equal(atC.status, 401, 'replica C, started after the announcement, reads the ending from shared state');
    t.equal(
      (await get(`${c.url}/admin/users`, { accept: 'application/json', cookie: jar.header() })).status,
      200,
      'and accepts the new cookie',
    );
  },
);
