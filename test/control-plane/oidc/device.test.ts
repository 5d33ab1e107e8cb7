import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { decodeJwt } from 'jose';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import { DEVICE_CODE_GRANT } from '#lib/oauth/device-code.js';
import { manualClock } from '../../helpers/build.js';
import { ADMIN, RESOURCE, registerClient } from '../../helpers/oidc.js';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { decodeEntities } from '../../helpers/oidc.js';

type Tap = Parameters<typeof buildSignedIn>[0];

/**
 * The device authorization grant (RFC 8628) through HTTP, with the clock in the test's hands:
 * every answer the token endpoint gives while polling, the verification page's throttles and
 * step-up, and the one use of each code.
 */

async function setUp(t: Tap) {
  const clock = manualClock();
  const built = await buildSignedIn(t, {
    now: clock.now,
    state: new MemorySharedState(clock.now),
    config: { adminToken: ADMIN },
  });
  const client = await registerClient(built.app, {
    client_name: 'Keyplane CLI',
    redirect_uris: undefined,
    post_logout_redirect_uris: undefined,
    grant_types: [DEVICE_CODE_GRANT, 'refresh_token'],
    token_endpoint_auth_method: 'none',
  });
  return { ...built, clock, client };
}

async function startDevice(app: FastifyInstance, clientId: string, extra: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/auth/device',
    payload: new URLSearchParams({ client_id: clientId, scope: 'openid profile offline_access', ...extra }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  return res;
}

async function poll(app: FastifyInstance, clientId: string, deviceCode: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/auth/token',
    payload: new URLSearchParams({
      grant_type: DEVICE_CODE_GRANT,
      client_id: clientId,
      device_code: deviceCode,
    }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  return res;
}

/** Types the code on the verification page and presses Continue (or Cancel) on the consent page. */
async function decide(browser: Browser, userCode: string, decision: 'allow' | 'deny') {
  const shown = await browser.post('/device', { user_code: userCode });
  if (shown.statusCode !== 200) return shown;
  const approval = /name="approval" value="([^"]+)"/.exec(shown.body)?.[1];
  return browser.post('/device/approve', { approval: decodeEntities(approval ?? ''), decision });
}

t.test('a device polls pending, is slowed down, and gets tokens once the person approved', async (t) => {
  const { app, clock, client, signIn } = await setUp(t);
  const discovery = (await app.inject('/.well-known/openid-configuration')).json();
  t.equal(discovery.device_authorization_endpoint, 'http://localhost:4400/auth/device');
  t.ok(discovery.grant_types_supported.includes(DEVICE_CODE_GRANT));

  const started = await startDevice(app, client.client_id);
  t.equal(started.statusCode, 200);
  const body = started.json();
  t.match(body, {
    user_code: /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/,
    verification_uri: 'http://localhost:4400/device',
    expires_in: 600,
    interval: 5,
  });
  t.equal(body.verification_uri_complete, `http://localhost:4400/device?user_code=${body.user_code}`);
  t.equal(started.headers['cache-control'], 'no-store');

  const pending = await poll(app, client.client_id, body.device_code);
  t.equal(pending.statusCode, 400);
  t.equal(pending.json().error, 'authorization_pending');
  t.equal((await poll(app, client.client_id, body.device_code)).json().error, 'slow_down', 'polled again at once');
  clock.advance(5_000);

  const { browser } = await signIn({ username: 'dana' });
  const page = await browser.get(`/device?user_code=${body.user_code.toLowerCase().replace('-', ' ')}`);
  t.equal(page.statusCode, 200);
  t.match(page.body, 'Keyplane CLI', 'the consent page names the client');
  t.match(page.body, `data-field="user_code">${body.user_code}<`, 'and shows the code to compare');
  t.match(page.body, 'Stay signed in when you are away', 'and the scopes');
  t.equal((await poll(app, client.client_id, body.device_code)).json().error, 'authorization_pending');
  clock.advance(5_000);

  const approval = /name="approval" value="([^"]+)"/.exec(page.body)![1]!;
  const done = await browser.post('/device/approve', { approval: decodeEntities(approval), decision: 'allow' });
  t.equal(done.statusCode, 200);
  t.match(done.body, 'data-result="approved"');
  t.match(done.body, /data-receipt="[0-9a-f]{64}"/, 'the decision left a receipt');

  const issued = await poll(app, client.client_id, body.device_code);
  t.equal(issued.statusCode, 200);
  const tokens = issued.json();
  t.ok(tokens.refresh_token, 'offline_access with the refresh grant: a refresh token');
  t.match(decodeJwt(tokens.id_token), { aud: client.client_id, acr: 'passkey', preferred_username: 'dana' });
  t.equal(decodeJwt(tokens.access_token).client_id, client.client_id);
  clock.advance(5_000);
  t.equal(
    (await poll(app, client.client_id, body.device_code)).json().error,
    'invalid_grant',
    'the device code works once',
  );

  const replay = await browser.post('/device/approve', { approval: decodeEntities(approval), decision: 'allow' });
  t.equal(replay.statusCode, 403, 'the approval token works once');
});

t.test(
  'a declined request answers access_denied, an old one expired_token, and another client invalid_grant',
  async (t) => {
    const { app, clock, client, signIn } = await setUp(t);
    const { browser } = await signIn({ username: 'erin' });

    const declined = (await startDevice(app, client.client_id)).json();
    const denied = await decide(browser, declined.user_code, 'deny');
    t.match(denied.body, 'data-result="denied"');
    t.equal((await poll(app, client.client_id, declined.device_code)).json().error, 'access_denied');

    const other = await registerClient(app, {
      redirect_uris: undefined,
      post_logout_redirect_uris: undefined,
      grant_types: [DEVICE_CODE_GRANT],
      scope: 'openid',
      token_endpoint_auth_method: 'none',
    });
    const mine = (await startDevice(app, client.client_id)).json();
    t.equal(
      (await poll(app, other.client_id, mine.device_code)).json().error,
      'invalid_grant',
      "another client's code",
    );

    clock.advance(601_000);
    t.equal((await poll(app, client.client_id, mine.device_code)).json().error, 'expired_token');
    const late = await browser.post('/device', { user_code: mine.user_code });
    t.equal(late.statusCode, 400, 'an expired user code is not found');
    t.match(late.body, 'data-reason="invalid_user_code"');
  },
);

t.test('the device endpoint refuses what RFC 8628 and the registration refuse', async (t) => {
  const { app } = await setUp(t);
  const codeOnly = await registerClient(app, { token_endpoint_auth_method: 'none' });
  const refused = await startDevice(app, codeOnly.client_id);
  t.equal(refused.statusCode, 400);
  t.equal(refused.json().error, 'unauthorized_client');
  const unknown = await startDevice(app, 'cl_unknown');
  t.equal(unknown.statusCode, 401);
  t.equal(unknown.json().error, 'invalid_client');
  const confidential = await registerClient(app, {
    redirect_uris: undefined,
    post_logout_redirect_uris: undefined,
    grant_types: [DEVICE_CODE_GRANT],
    scope: 'openid',
  });
  t.equal(
    (await startDevice(app, confidential.client_id)).json().error,
    'invalid_client',
    'a confidential client authenticates',
  );
  const withResource = await registerClient(app, {
    redirect_uris: undefined,
    post_logout_redirect_uris: undefined,
    grant_types: [DEVICE_CODE_GRANT],
    scope: 'openid',
    token_endpoint_auth_method: 'none',
  });
  t.equal(
    (await startDevice(app, withResource.client_id, { resource: 'https://elsewhere.example' })).json().error,
    'invalid_target',
  );
  t.equal((await startDevice(app, withResource.client_id, { resource: RESOURCE })).statusCode, 200);
  const noGrant = await app.inject({
    method: 'POST',
    url: '/auth/token',
    payload: { grant_type: DEVICE_CODE_GRANT, client_id: codeOnly.client_id, device_code: 'x' },
  });
  t.equal(noGrant.json().error, 'unauthorized_client', 'the token endpoint also checks the registration');
  const noRedirects = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${ADMIN}` },
    payload: { grant_types: ['authorization_code'] },
  });
  t.equal(noRedirects.json().error, 'invalid_redirect_uri', 'the code grant still needs redirect URIs');
});

t.test('the verification page: sign-in first, a stale sign-in steps up, wrong codes are throttled', async (t) => {
  const { app, clock, client, signIn } = await setUp(t);
  const started = (await startDevice(app, client.client_id)).json();

  const anonymous = await app.inject(`/device?user_code=${started.user_code}`);
  t.equal(anonymous.statusCode, 303);
  t.equal(anonymous.headers.location, `/auth?return=${encodeURIComponent(`/device?user_code=${started.user_code}`)}`);

  const { browser } = await signIn({ username: 'frank' });
  const form = await browser.get('/device');
  t.match(form.body, 'name="user_code"');

  clock.advance(11 * 60_000);
  const fresh = (await startDevice(app, client.client_id)).json();
  const stale = await browser.post('/device', { user_code: fresh.user_code });
  t.equal(stale.statusCode, 303, 'a sign-in older than 10 minutes steps up first');
  t.equal(stale.headers.location, `/auth/step-up?return=${encodeURIComponent(`/device?user_code=${fresh.user_code}`)}`);

  const { browser: weak } = await signIn({ username: 'grace', assurance: 'email' });
  const viaEmail = await weak.post('/device', { user_code: fresh.user_code });
  t.equal(viaEmail.statusCode, 303, 'a sign-in by e-mail link steps up to a passkey');

  let throttled = false;
  for (let i = 0; i < 12 && !throttled; i++) {
    const wrong = await weak.post('/device', { user_code: 'BBBB-BBBB' });
    throttled = wrong.statusCode === 429;
  }
  t.ok(throttled, 'wrong codes run out');
  // docs/errors.md#one-error-path: the entry form's plain post is refused with the form again,
  // the typed code kept and the reason; the same refusal for a script is the envelope.
  const locked = await weak.post('/device', 'user_code=cccc-cccc', {
    accept: 'text/html',
    'content-type': 'application/x-www-form-urlencoded',
  });
  t.equal(locked.statusCode, 429);
  t.match(locked.headers['content-type'], /^text\/html/);
  t.ok(Number(locked.headers['retry-after']) > 0, 'with Retry-After');
  t.match(locked.body, 'action="/device"', 'the entry form again');
  t.match(locked.body, 'value="cccc-cccc"');
  t.match(locked.body, '<code data-reason="rate_limited">');
  const lockedJson = await weak.post('/device', { user_code: 'cccc-cccc' }, { accept: 'application/json' });
  t.equal(lockedJson.statusCode, 429);
  t.same(lockedJson.json(), {
    ok: false,
    reason: 'rate_limited',
    message: 'too many wrong codes; wait before trying again',
  });
  t.equal(
    (await weak.post('/device', { user_code: fresh.user_code })).statusCode,
    429,
    'and then a right one says nothing either',
  );
  clock.advance(15 * 60_000);
  t.equal((await weak.post('/device', { user_code: 'BBBB-BBBB' })).statusCode, 400, 'until the lock ends');
});
