import t, { type Test } from 'tap';
import { ADMIN, goodRequest, obtainCode, pkcePair, redirectParams, registerClient } from '../../helpers/oidc.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

/**
 * The deprecated v1 bridge through HTTP: off unless a client opts in, a macaroon handed only to a
 * registered v1 return URL of such a client, redeemed server to server, refused in every other
 * shape, and every answer marked deprecated and counted.
 */
const V1_RETURN = 'https://legacy.example.com/v1/return';

async function setup(t: Test, v1 = true) {
  let clock = Date.parse('2026-11-23T10:00:00Z');
  const built = await buildSignedIn(t, { config: { adminToken: ADMIN }, now: () => clock });
  // First-party (the operator's own legacy app): the token goes without an approval page.
  const client = await registerClient(built.app, {
    redirect_uris: [V1_RETURN],
    ...(v1 ? { v1_bridge: true, first_party: true } : {}),
  });
  const { browser, identityId } = await built.signIn({ username: 'legacy-lee' });
  /** Runs the v1 return flow for the signed-in browser; the token the RP received. */
  const v1Token = async (): Promise<string> => {
    const first = await browser.get(`/auth?return=${encodeURIComponent(V1_RETURN)}`);
    t.equal(first.statusCode, 303);
    const second = await browser.get(String(first.headers.location));
    t.equal(second.statusCode, 302, second.body);
    const location = new URL(String(second.headers.location));
    t.equal(`${location.origin}${location.pathname}`, V1_RETURN);
    return location.searchParams.get('session')!;
  };
  const verify = (token: unknown) =>
    built.app.inject({ method: 'POST', url: '/auth/verify-session', payload: { token } });
  return {
    ...built,
    client,
    browser,
    identityId,
    v1Token,
    verify,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

t.test(
  'a signed-in user reaches a v1 return URL with a macaroon the relying party redeems; answers are deprecated and counted',
  async (t) => {
    const { app, browser, identityId, v1Token, verify } = await setup(t);
    const token = await v1Token();
    t.match(token, /^[A-Za-z0-9_-]+$/);
    const macaroon = JSON.parse(Buffer.from(token, 'base64url').toString());
    t.match(macaroon, { v: 2, i: /^v1s_/ });
    t.match(
      macaroon.c.map((c: { i: string }) => c.i),
      [/^client_id = /, /^exp = \d+$/, `identity = ${identityId}`, /^session = /],
    );

    const redeemed = await verify(token);
    t.equal(redeemed.statusCode, 200);
    t.same(redeemed.json(), { ok: true, identityId });
    t.match(redeemed.headers.deprecation, /^@\d+$/);
    t.equal(redeemed.headers.sunset, 'Wed, 30 Jun 2027 00:00:00 GMT');
    t.match(redeemed.headers.link, /\/auth\/v1\/migrate>; rel="deprecation"/);

    const script = await app.inject({ method: 'GET', url: '/auth-client.js' });
    t.equal(script.statusCode, 200);
    t.match(script.headers['content-type'], /javascript/);
    t.match(script.body, /data-signin/);
    t.ok(script.headers.deprecation);

    const guide = await browser.get('/auth/v1/migrate');
    t.equal(guide.statusCode, 200);
    t.match(guide.body, /redirect_uri/);
    t.match(guide.body, /@keyplane\/sdk/);

    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    t.match(metrics.body, /kp_v1_bridge_requests_total\{endpoint="\/auth\/verify-session",outcome="ok"\} 1/);
    t.match(metrics.body, /kp_v1_bridge_requests_total\{endpoint="\/auth\/v1\/return",outcome="ok"\} 1/);
  },
);

t.test('without a session the v1 return signs in first and comes back', async (t) => {
  const { app } = await setup(t);
  const res = await app.inject({ method: 'GET', url: `/auth/v1/return?to=${encodeURIComponent(V1_RETURN)}` });
  t.equal(res.statusCode, 303);
  const location = new URL(String(res.headers.location), 'http://x');
  t.equal(location.pathname, '/auth');
  t.equal(
    location.searchParams.get('return'),
    `/auth/v1/return?to=${encodeURIComponent(V1_RETURN)}`,
    'a same-origin path the sign-in page returns to',
  );
});

t.test('the bridge is off unless the client opted in, and only for its exact registered return URLs', async (t) => {
  const { browser } = await setup(t, false);
  const off = await browser.get(`/auth/v1/return?to=${encodeURIComponent(V1_RETURN)}`);
  t.equal(off.statusCode, 400);
  t.equal(off.json().reason, 'invalid_redirect_uri');
  t.notOk(off.headers.location);
  for (const other of [`${V1_RETURN}/`, `${V1_RETURN}?x=1`, 'https://evil.example/v1/return', 'javascript:alert(1)']) {
    const res = await browser.get(`/auth/v1/return?to=${encodeURIComponent(other)}`);
    t.equal(res.statusCode, 400, other);
    t.notOk(res.headers.location, `${other}: never redirected`);
  }
});

t.test('verify-session refuses forged, tampered, expired, attenuated and orphaned tokens alike', async (t) => {
  const { browser, v1Token, verify, advance } = await setup(t);
  const token = await v1Token();
  const json = JSON.parse(Buffer.from(token, 'base64url').toString());
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const refusals: Array<[string, unknown]> = [
    ['garbage', 'not-a-macaroon'],
    ['empty JSON', encode({})],
    [
      'another identity',
      encode({
        ...json,
        c: json.c.map((c: { i: string }) => (c.i.startsWith('identity') ? { i: 'identity = usr_other' } : c)),
      }),
    ],
    ['a caveat dropped', encode({ ...json, c: json.c.slice(1) })],
    ['signature of another token', encode({ ...json, s64: Buffer.alloc(32).toString('base64url') })],
  ];
  for (const [label, value] of refusals) {
    const res = await verify(value);
    t.equal(res.statusCode, 401, label);
    t.equal(res.json().reason, 'invalid_session_token', label);
  }
  t.equal((await verify(123)).json().reason, 'invalid_session_token', 'a number is no token');

  // Attenuation by the holder is well-formed, but a caveat we do not know can never be satisfied.
  const { createHmac } = await import('node:crypto');
  const extended = {
    ...json,
    c: [...json.c, { i: 'ip = 10.0.0.1' }],
    s64: createHmac('sha256', Buffer.from(json.s64, 'base64url')).update('ip = 10.0.0.1').digest('base64url'),
  };
  t.equal((await verify(encode(extended))).json().reason, 'invalid_session_token', 'an unknown caveat');

  t.equal((await verify(token)).statusCode, 200, 'the real token is still good');
  advance(301_000);
  t.equal((await verify(token)).json().reason, 'invalid_session_token', 'expired after sessionTokenLifetime');

  // Signing out ends the v1 token with the session it came from.
  const fresh = await v1Token();
  t.equal((await verify(fresh)).statusCode, 200);
  await browser.post('/auth/signout');
  t.equal((await verify(fresh)).json().reason, 'invalid_session_token', 'the session ended');
});

t.test('registration: v1_bridge must be a boolean; a v2 redirect carries only code, state and iss', async (t) => {
  const { app, browser } = await setup(t);
  const bad = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { redirect_uris: [V1_RETURN], v1_bridge: 'yes' },
  });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().reason, 'invalid_client_metadata');
  const v2 = await registerClient(app);
  const { challenge } = pkcePair();
  const { res } = await obtainCode(browser, goodRequest(v2, challenge));
  t.same([...redirectParams(res).keys()].sort(), ['code', 'iss', 'state'], 'no bearer-like session in a v2 callback');
});

t.test('a session registration cannot turn the bridge on (400 invalid_client_metadata)', async (t) => {
  const { app, browser } = await setup(t);
  const res = await browser.post('/register', { redirect_uris: ['https://evil.example/v1/return'], v1_bridge: true });
  t.equal(res.statusCode, 400, res.body);
  t.equal(res.json().reason, 'invalid_client_metadata');
  t.match(res.json().error_description, /v1_bridge/);
  const plain = await browser.post('/register', { redirect_uris: ['https://evil.example/v1/return'] });
  t.equal(plain.statusCode, 201, 'the same registration without v1_bridge is fine');
  const update = await app.inject({
    method: 'PUT',
    url: `/register/${plain.json().client_id}`,
    headers: { authorization: `Bearer ${plain.json().registration_access_token}` },
    payload: { client_id: plain.json().client_id, redirect_uris: ['https://evil.example/v1/return'], v1_bridge: true },
  });
  t.equal(update.statusCode, 400, 'nor can an update turn it on');
});

t.test('a v1 client the account has not approved gets no token until the account approves it', async (t) => {
  const built = await setup(t);
  const other = 'https://other-legacy.example/v1/return';
  await registerClient(built.app, { client_name: 'Other Legacy', redirect_uris: [other], v1_bridge: true });
  const issued = async () => {
    const text = await built.services.metrics.getSingleMetricAsString('keyplane_receipts_total');
    return Number(/kind="v1\.session_issued"\} (\d+)/.exec(text)?.[1] ?? 0);
  };
  const before = await issued();
  const via = await built.browser.get(`/auth?return=${encodeURIComponent(other)}`);
  t.equal(via.statusCode, 303);
  const page = await built.browser.get(String(via.headers.location));
  t.equal(page.statusCode, 200, 'the approval page, not a redirect');
  t.notOk(page.headers.location);
  t.notMatch(page.body, /session=/);
  t.match(page.body, /Continue to Other Legacy\?/);
  t.match(page.body, /Know who you are/);
  t.match(page.body, /action="\/auth\/v1\/approve"/);
  t.match(page.headers['content-security-policy'], /form-action 'self' https:\/\/other-legacy\.example/);
  t.equal(await issued(), before, 'no token issued');
  const hidden = (name: string) =>
    new RegExp(`name="${name}" value="([^"]*)"`).exec(page.body)![1]!.replace(/&amp;/g, '&');
  const answer = { to: hidden('to'), approval: hidden('approval') };
  const forged = await built.browser.post(
    '/auth/v1/approve',
    { ...answer, decision: 'allow' },
    { origin: 'https://other-legacy.example' },
  );
  t.equal(forged.statusCode, 403, 'a cross-site approval is refused');
  const { browser: stranger } = await built.signIn({ username: 'stranger' });
  const stolen = await stranger.post('/auth/v1/approve', { ...answer, decision: 'allow' });
  t.equal(stolen.statusCode, 403, "another session cannot use the page's token");
  t.notOk(stolen.headers.location);

  const again = await built.browser.get(`/auth/v1/return?to=${encodeURIComponent(other)}`);
  const token = /name="approval" value="([^"]*)"/.exec(again.body)![1]!;
  const denied = await built.browser.post('/auth/v1/approve', { to: other, approval: token, decision: 'deny' });
  t.equal(denied.statusCode, 303);
  t.equal(new URL(String(denied.headers.location)).searchParams.get('error'), 'access_denied');
  t.notMatch(String(denied.headers.location), /session=/);

  const third = await built.browser.get(`/auth/v1/return?to=${encodeURIComponent(other)}`);
  const approved = await built.browser.post('/auth/v1/approve', {
    to: other,
    approval: /name="approval" value="([^"]*)"/.exec(third.body)![1]!,
    decision: 'allow',
  });
  t.equal(approved.statusCode, 303, approved.body);
  const handed = new URL(String(approved.headers.location));
  t.equal(`${handed.origin}${handed.pathname}`, other);
  t.same((await built.verify(handed.searchParams.get('session'))).json(), { ok: true, identityId: built.identityId });
  const remembered = await built.browser.get(`/auth/v1/return?to=${encodeURIComponent(other)}`);
  t.equal(remembered.statusCode, 302, 'approved once: no page again');
  t.equal(await issued(), before + 2);
});
