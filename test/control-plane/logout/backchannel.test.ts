import t, { type Test } from 'tap';
import type { FastifyInstance } from 'fastify';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from 'jose';
import { TEST_ISSUER, manualClock, tempDir } from '../../helpers/build.js';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import {
  ADMIN,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  registerClient,
  type Registered,
} from '../../helpers/oidc.js';
import { makeTestCa, startHttpsServer, type TestCa } from '../../helpers/tls.js';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['discovery', 'account', 'oidc', 'admin', 'clients'] as const;

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

interface Delivery {
  path: string;
  contentType: string;
  token: string;
}

/**
 * A relying party's back-channel logout endpoints on https (the test CA): records every POST and
 * answers each path with the next status planned for it (200 once they run out).
 */
async function relyingParty(t: Test, tls: TestCa) {
  const received: Delivery[] = [];
  const planned = new Map<string, number[]>();
  const server = await startHttpsServer(t, tls, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        contentType: String(req.headers['content-type']),
        token: new URLSearchParams(body).get('logout_token') ?? '',
      });
      res.statusCode = planned.get(req.url ?? '')?.shift() ?? 200;
      res.end();
    });
  });
  return {
    received,
    origin: server.origin,
    plan: (path: string, ...statuses: number[]) => planned.set(path, [...(planned.get(path) ?? []), ...statuses]),
  };
}

async function setup(
  t: Test,
  options: { config?: Record<string, unknown>; dataDir?: string; now?: () => number } = {},
) {
  const tls = makeTestCa(t);
  const rp = await relyingParty(t, tls);
  const built = await buildSignedIn(t, {
    areas,
    ...(options.now ? { now: options.now } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile, ...options.config },
  });
  const events: DomainEvent[] = [];
  built.app.kp.events.subscribe((_tx, event) => void events.push(event));
  const client = await registerClient(built.app, { backchannel_logout_uri: `${rp.origin}/backchannel` });
  return { ...built, tls, rp, client, events };
}

/** Signs in through the code flow and returns the ID token's claims. */
async function tokensFor(app: FastifyInstance, browser: Browser, client: Registered) {
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  const res = await exchangeCode(app, client, code, verifier);
  if (res.statusCode !== 200) throw new Error(res.body);
  const idToken = res.json().id_token as string;
  return { idToken, claims: decodeJwt(idToken) as { sub: string; sid: string } };
}

/** What a relying party does with a logout token (Back-Channel Logout 1.0 §2.6), with the JWKS from discovery. */
async function verifyLogoutToken(app: FastifyInstance, token: string, clientId: string) {
  const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as JSONWebKeySet;
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
    currentDate: new Date(app.kp.now()),
    issuer: TEST_ISSUER,
    audience: clientId,
    typ: 'logout+jwt',
    algorithms: ['ES256'],
    requiredClaims: ['iat', 'exp', 'jti', 'events'],
  });
  return { payload, protectedHeader };
}

t.test('sign-out sends each client that got tokens in the session one signed logout token', async (t) => {
  const { app, signIn, client, rp, events } = await setup(t);
  const bystander = await registerClient(app, { backchannel_logout_uri: `${rp.origin}/bystander` });
  const silent = await registerClient(app, {});
  const { browser, identityId } = await signIn({ username: 'ada' });
  const { claims } = await tokensFor(app, browser, client);
  await tokensFor(app, browser, silent);
  t.same(rp.received, [], 'nothing is sent while the session lives');

  t.equal((await browser.post('/auth/signout')).statusCode, 200);
  await app.kp.backchannelLogout.deliverDue();
  t.equal(
    rp.received.length,
    1,
    'one logout token: the client without tokens in the session and the one without a URI get none',
  );
  const [delivery] = rp.received;
  t.equal(delivery!.path, '/backchannel');
  t.match(delivery!.contentType, /^application\/x-www-form-urlencoded/);
  const { payload, protectedHeader } = await verifyLogoutToken(app, delivery!.token, client.client_id);
  t.match(protectedHeader, { alg: 'ES256', typ: 'logout+jwt' });
  t.ok(protectedHeader.kid, 'kid from the JWKS');
  t.equal(payload.sub, identityId);
  t.equal(payload.sid, claims.sid, "sid is the one the client's ID token named");
  t.same(payload.events, { [EVENT]: {} });
  t.notOk('nonce' in payload, 'no nonce (§2.4)');
  t.ok(typeof payload.jti === 'string' && payload.jti.length >= 20);
  t.ok((payload.exp as number) - (payload.iat as number) <= 120, 'short-lived');
  t.notOk(bystander.client_id === client.client_id);

  const kinds = events.map((e) => e.type);
  t.equal(kinds.filter((k) => k === 'logout.backchannel_queued').length, 1);
  t.match(
    events.find((e) => e.type === 'logout.backchannel_delivered'),
    { clientId: client.client_id, identityId, sessionId: claims.sid, attempts: 1, status: 200, outcome: 'success' },
    'the delivery is receipted',
  );
  t.same(
    (await app.kp.storage.logouts.listForSession(claims.sid)).map((l) => l.state),
    ['delivered'],
  );
});

t.test('every way a session ends tells the client; a session that lives on does not', async (t) => {
  const { app, signIn, client, rp } = await setup(t);
  const admin = { authorization: `Bearer ${ADMIN}` };
  const ends: Array<[string, (b: Browser, other: Browser, id: string, hint: string) => Promise<unknown>]> = [
    ['sign-out', (b) => b.post('/auth/signout')],
    ['RP-initiated logout', (b, _o, _id, hint) => b.get(`/auth/logout?id_token_hint=${encodeURIComponent(hint)}`)],
    [
      'revoked from another session of the account',
      async (b, other) => {
        const sessions = (await other.get('/account?format=json')).json().sessions as Array<{
          identifier: string;
          current: boolean;
        }>;
        const target = sessions.find((s) => !s.current)!;
        return other.post('/auth/sessions/revoke', { identifier: target.identifier });
      },
    ],
    [
      'an operator ends the sessions',
      (_b, _o, id) =>
        app.inject({ method: 'POST', url: `/admin/accounts/${id}/sessions/revoke`, headers: admin, payload: {} }),
    ],
    [
      'an operator disables the account',
      (_b, _o, id) => app.inject({ method: 'POST', url: `/admin/accounts/${id}/disable`, headers: admin }),
    ],
    [
      'an operator deletes the account',
      (_b, _o, id) => app.inject({ method: 'DELETE', url: `/admin/accounts/${id}`, headers: admin }),
    ],
    ['another account signs in in the same browser', (b) => signIn({ username: `other-${rp.received.length}` }, b)],
  ];
  for (const [name, end] of ends) {
    const username = `u${rp.received.length}`;
    const { browser, identityId } = await signIn({ username });
    const { other } = { other: (await signIn({ username })).browser };
    const { idToken, claims } = await tokensFor(app, browser, client);
    // Using the tokens (a refresh would do the same) ends nothing.
    await app.kp.backchannelLogout.deliverDue();
    const before = rp.received.length;
    const res = (await end(browser, other, identityId, idToken)) as { statusCode?: number } | undefined;
    t.ok(res === undefined || (res.statusCode ?? 200) < 400, `${name}: the action succeeded`);
    await app.kp.backchannelLogout.deliverDue();
    const mine = rp.received.slice(before).filter((d) => decodeJwt(d.token).sid === claims.sid);
    t.equal(mine.length, 1, `${name}: one logout token for the session`);
    t.equal(decodeJwt(mine[0]!.token).sub, identityId, `${name}: for the account`);
  }
});

t.test('a refused delivery is retried with growing waits, the same jti each time', async (t) => {
  const clock = manualClock();
  const { app, signIn, client, rp, events } = await setup(t, { now: clock.now });
  rp.plan('/backchannel', 503, 500);
  const { browser } = await signIn({ username: 'ada' });
  const { claims } = await tokensFor(app, browser, client);
  await browser.post('/auth/signout');
  await app.kp.backchannelLogout.deliverDue();
  const [row] = await app.kp.storage.logouts.listForSession(claims.sid);
  t.match(row, { state: 'pending', attempts: 1, lastError: 'status_503', nextAttemptAt: clock.now() + 5000 });
  await app.kp.backchannelLogout.deliverDue();
  t.equal(rp.received.length, 1, 'not before the wait is over');
  clock.advance(5000);
  await app.kp.backchannelLogout.deliverDue();
  t.match(await app.kp.storage.logouts.get(row!.logoutId), {
    attempts: 2,
    lastError: 'status_500',
    nextAttemptAt: clock.now() + 15_000,
  });
  clock.advance(15_000);
  await app.kp.backchannelLogout.deliverDue();
  t.equal(rp.received.length, 3);
  t.match(await app.kp.storage.logouts.get(row!.logoutId), { state: 'delivered', attempts: 3, lastError: null });
  t.same(new Set(rp.received.map((d) => decodeJwt(d.token).jti)).size, 1, 'one jti across the retries');
  t.match(
    events.find((e) => e.type === 'logout.backchannel_delivered'),
    { attempts: 3 },
  );
});

t.test('a client that refuses the token, one that never answers well, and one deleted are given up', async (t) => {
  const clock = manualClock();
  const { app, signIn, client, rp, events } = await setup(t, {
    now: clock.now,
    config: { 'oidc.backchannelLogout.maxAttempts': 2 },
  });
  const failing = await registerClient(app, { backchannel_logout_uri: `${rp.origin}/failing` });
  const { browser } = await signIn({ username: 'ada' });
  await tokensFor(app, browser, client);
  const { claims } = await tokensFor(app, browser, failing);
  // The first client says 400 (it will never take this token); the second 503 twice.
  rp.plan('/backchannel', 400);
  rp.plan('/failing', 503, 503);
  await browser.post('/auth/signout');
  // A client deleted after its logout was queued and before it was delivered.
  await app.kp.storage.logouts.enqueue({
    logoutId: 'bcl_gone',
    clientId: 'cl_deleted',
    identityId: 'usr_ada',
    sessionId: claims.sid,
    jti: 'jti-gone',
    createdAt: clock.now(),
    attempts: 0,
    nextAttemptAt: clock.now(),
    state: 'pending',
    lastError: null,
    finishedAt: null,
  });
  await app.kp.backchannelLogout.deliverDue();
  clock.advance(5000);
  await app.kp.backchannelLogout.deliverDue();
  const rows = await app.kp.storage.logouts.listForSession(claims.sid);
  t.same(
    rows.map((r) => r.state),
    ['abandoned', 'abandoned', 'abandoned'],
  );
  const abandoned = events.filter((e) => e.type === 'logout.backchannel_abandoned') as Array<
    DomainEvent & { clientId: string; error: string; attempts: number }
  >;
  t.same(
    abandoned.map((e) => [e.clientId, e.error, e.attempts]).sort(),
    [
      [client.client_id, 'status_400', 1],
      ['cl_deleted', 'client_deleted', 1],
      [failing.client_id, 'status_503', 2],
    ].sort(),
  );
  t.ok(abandoned.every((e) => e.outcome === 'failure'));
});

t.test('queued logout tokens survive a restart and are delivered by the next process', async (t) => {
  const clock = manualClock();
  const dataDir = tempDir(t);
  const tls = makeTestCa(t);
  const config = { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': tls.caFile };
  const rp = await relyingParty(t, tls);
  rp.plan('/backchannel', 503);
  const first = await buildSignedIn(t, { areas, now: clock.now, dataDir, config });
  const client = await registerClient(first.app, { backchannel_logout_uri: `${rp.origin}/backchannel` });
  const { browser } = await first.signIn({ username: 'ada' });
  const { claims } = await tokensFor(first.app, browser, client);
  await browser.post('/auth/signout');
  await first.app.kp.backchannelLogout.deliverDue();
  t.equal(rp.received.length, 1);
  await first.app.close();
  await first.services.close();

  clock.advance(5000);
  const second = await buildSignedIn(t, { areas, now: clock.now, dataDir, config });
  await second.app.kp.backchannelLogout.deliverDue();
  t.equal(rp.received.length, 2);
  t.match(await second.app.kp.storage.logouts.listForSession(claims.sid), [{ state: 'delivered', attempts: 2 }]);
  const { payload } = await verifyLogoutToken(second.app, rp.received[1]!.token, client.client_id);
  t.equal(payload.sid, claims.sid);
});

t.test('registration refuses a backchannel_logout_uri the server must never call', async (t) => {
  const { app } = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  for (const uri of ['https://127.0.0.1/logout', 'https://10.0.0.1/logout', 'http://rp.example.com/logout']) {
    const res = await app.inject({
      method: 'POST',
      url: '/register',
      headers: { authorization: `Bearer ${ADMIN}` },
      payload: { redirect_uris: ['https://rp.example.com/cb'], backchannel_logout_uri: uri },
    });
    t.equal(res.statusCode, 400, uri);
    t.match(res.json(), { reason: 'invalid_client_metadata', error_description: /backchannel_logout_uri/ }, uri);
  }
});
