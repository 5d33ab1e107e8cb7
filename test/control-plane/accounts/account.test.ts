import t from 'tap';
import { build, manualClock, TEST_ISSUER } from '../../helpers/build.js';
import { absorbCookies, headersFor, signIn, signUp } from '../../helpers/accounts.js';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';
import { inPageContext } from '../../../control-plane/src/app.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['account', 'pages', 'assets', 'passkeys'] as const;

type App = Awaited<ReturnType<typeof build>>['app'];
const post = (app: App, url: string, headers: Record<string, string>, payload?: unknown) =>
  app.inject({
    method: 'POST',
    url,
    headers,
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });

t.test('/account?format=json lists exactly the documented fields', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada', { displayName: 'Ada' });
  const res = await app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers });
  t.equal(res.statusCode, 200);
  const body = res.json();
  for (const key of [
    'identityId',
    'username',
    'aliases',
    'displayName',
    'preferences',
    'emails',
    'passkeys',
    'totp',
    'sessions',
    'devices',
  ])
    t.ok(key in body, key);
  t.match(body, {
    ok: true,
    identityId: ada.identityId,
    username: 'ada',
    aliases: [],
    displayName: 'Ada',
    preferences: {},
    emails: [],
    totp: 'off',
    passkeys: [{ credId: String, label: 'Passkey 1' }],
    sessions: [{ identifier: /^ses_/, deviceId: /^dev_/, assurance: 'passkey', current: true }],
    devices: [{ deviceId: body.sessions[0].deviceId }],
  });
  const byAccept = await app.inject({
    method: 'GET',
    url: '/account',
    headers: { ...ada.headers, accept: 'application/json' },
  });
  t.equal(byAccept.json().username, 'ada', 'Accept: application/json also gets JSON');
});

t.test('/account without a session: 401 for JSON, a redirect to /auth for HTML', async (t) => {
  const { app } = await build(t, { areas });
  const json = await app.inject({ method: 'GET', url: '/account?format=json' });
  t.equal(json.statusCode, 401);
  t.equal(json.json().reason, 'unauthorized');
  const page = await app.inject({ method: 'GET', url: '/account', headers: { accept: 'text/html' } });
  t.equal(page.statusCode, 303);
  t.equal(page.headers.location, '/auth');
  const forged = await app.inject({
    method: 'GET',
    url: '/account?format=json',
    headers: { cookie: 'kp_session=' + 'A'.repeat(43) },
  });
  t.equal(forged.statusCode, 401, 'an unknown cookie value is no session');
  t.match(String(forged.headers['set-cookie']), /kp_session=;/, 'and is cleared');
  const junk = await app.inject({
    method: 'GET',
    url: '/account?format=json',
    headers: { cookie: 'kp_session=short' },
  });
  t.equal(junk.statusCode, 401);
});

t.test('the /account page shows the username with a strict CSP and its script', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const res = await app.inject({ method: 'GET', url: '/account', headers: { ...ada.headers, accept: 'text/html' } });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /text\/html/);
  t.match(res.body, /data-field="username">ada</);
  const nonce = /script-src 'nonce-([^']+)'/.exec(String(res.headers['content-security-policy']))?.[1];
  t.ok(nonce);
  t.match(
    res.body,
    new RegExp(`<script type="module" nonce="${nonce!.replace(/[+/=]/g, (c) => `\\${c}`)}" src="/assets/account.js">`),
  );
  t.notMatch(res.body, /onclick=|javascript:/, 'no inline handlers');
});

t.test('the /account page has a table of contents whose every link reaches a section heading', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const res = await app.inject({ method: 'GET', url: '/account', headers: { ...ada.headers, accept: 'text/html' } });
  const toc = /<nav aria-labelledby="toc-h" data-field="toc">([\s\S]*?)<\/nav>/.exec(res.body)?.[1];
  t.ok(toc, 'a table of contents');
  const targets = [...toc!.matchAll(/<a href="#([^"]+)">([^<]+)<\/a>/g)].map((m) => [m[1]!, m[2]!]);
  t.ok(targets.length >= 8, targets.map(([id]) => id).join(' '));
  for (const [id, label] of targets) {
    const heading = new RegExp(`<h2 id="${id}">([^<]+)</h2>`).exec(res.body);
    t.ok(heading, `#${id} is a section heading`);
    t.equal(heading?.[1], label, `the link to #${id} says the heading's words`);
  }
  const order = targets.map(([id]) => res.body.indexOf(`<h2 id="${id}">`));
  t.same(
    order,
    [...order].sort((a, b) => a - b),
    'in page order',
  );
});

t.test('the /auth page loads its module script; assets are served', async (t) => {
  const { app } = await build(t, { areas });
  const page = await app.inject({ method: 'GET', url: '/auth' });
  t.match(page.body, /name="username"/);
  t.match(page.body, /data-action="signup"/);
  t.match(page.body, /data-action="signin"/);
  t.match(page.body, /src="\/assets\/auth.js"/);
  for (const path of [
    '/assets/auth.js',
    '/assets/common.js',
    '/assets/account.js',
    '/assets/step-up.js',
    '/assets/simplewebauthn/index.js',
    '/assets/simplewebauthn/methods/startRegistration.js',
  ]) {
    const res = await app.inject({ method: 'GET', url: path });
    t.equal(res.statusCode, 200, path);
    t.match(res.headers['content-type'], /text\/javascript/, path);
  }
  for (const path of [
    '/assets/simplewebauthn/../package.json',
    '/assets/simplewebauthn/%2e%2e/%2e%2e/package.json',
    '/assets/simplewebauthn/index.d.ts',
    '/assets/simplewebauthn/nope.js',
  ]) {
    const res = await app.inject({ method: 'GET', url: path });
    t.equal(res.statusCode, 404, path);
  }
});

t.test('profile, rename with aliases that still sign in, and preferences merged key by key', async (t) => {
  const { app, services } = await build(t, { areas });
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, e) => {
    events.push(e);
  });
  const ada = await signUp(app, 'ada');
  await signUp(app, 'taken');

  t.match((await post(app, '/auth/profile', ada.headers, { displayName: '  Ada Lovelace ' })).json(), {
    ok: true,
    displayName: 'Ada Lovelace',
  });
  t.equal(
    (await post(app, '/auth/profile', ada.headers, { displayName: 'x'.repeat(65) })).json().reason,
    'display_name_invalid',
  );
  t.equal((await post(app, '/auth/profile', ada.headers, { displayName: 7 })).json().reason, 'display_name_invalid');

  const renamed = await post(app, '/auth/account/rename', ada.headers, { newUsername: 'Countess' });
  t.match(renamed.json(), { ok: true, username: 'countess', aliases: ['ada'] });
  t.match(events.at(-1), { type: 'account.renamed', identityId: ada.identityId });
  t.equal(
    (await post(app, '/auth/account/rename', ada.headers, { newUsername: 'taken' })).json().reason,
    'username_taken',
  );
  t.equal(
    (await post(app, '/auth/account/rename', ada.headers, { newUsername: 'no' })).json().reason,
    'invalid_username',
  );
  t.equal(
    (await post(app, '/auth/account/rename', ada.headers, { newUsername: 'countess' })).statusCode,
    200,
    'renaming to the same name is a no-op',
  );
  const other = await signUp(app, 'other');
  const grab = await post(app, '/auth/account/rename', other.headers, { newUsername: 'ADA' });
  t.equal(grab.json().reason, 'username_taken', 'an alias cannot be taken');
  const viaAlias = await signIn(app, ada, { user: 'ada' });
  const view = await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(viaAlias) });
  t.match(
    view.json(),
    { username: 'countess', aliases: ['ada'], displayName: 'Ada Lovelace' },
    'the old name still signs in',
  );

  t.same(
    (await post(app, '/auth/preferences', ada.headers, { preferences: { theme: 'dark', lang: 'en' } })).json()
      .preferences,
    { theme: 'dark', lang: 'en' },
  );
  t.same(
    (
      await post(app, '/auth/preferences', ada.headers, {
        preferences: { motion: 'reduce', contrast: 'more', text: 'large', email: 'none' },
      })
    ).json().preferences,
    { theme: 'dark', lang: 'en', motion: 'reduce', contrast: 'more', text: 'large', email: 'none' },
  );
  t.same((await post(app, '/auth/preferences', ada.headers, { preferences: { theme: null } })).json().preferences, {
    lang: 'en',
    motion: 'reduce',
    contrast: 'more',
    text: 'large',
    email: 'none',
  });
  t.equal(
    (await post(app, '/auth/preferences', ada.headers, { preferences: { font: 'comic' } })).json().reason,
    'invalid_preferences',
  );
  t.equal(
    (await post(app, '/auth/preferences', ada.headers, { preferences: { theme: 'neon' } })).json().reason,
    'invalid_preferences',
  );
  t.equal(
    (await post(app, '/auth/preferences', ada.headers, { preferences: 'dark' })).json().reason,
    'invalid_preferences',
  );
});

t.test('/account/export is a portable, secret-free copy', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const res = await app.inject({ method: 'GET', url: '/account/export', headers: ada.headers });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-disposition'], /attachment/);
  const body = res.json();
  t.match(body, {
    ok: true,
    format: 'keyplane-account-export/v1',
    account: { identityId: ada.identityId, username: 'ada', passkeys: [{ label: 'Passkey 1' }] },
  });
  t.notMatch(res.body, /publicKey|tokenHash|token_hash|ses_/, 'no keys, hashes or session identifiers');
  t.notMatch(res.body, new RegExp(ada.cookies['kp_session']!), 'no cookie values');
  t.equal((await app.inject({ method: 'GET', url: '/account/export' })).statusCode, 401);
});

t.test('sessions: list, revoke another, revoke this one, unknown identifiers', async (t) => {
  const { app, services } = await build(t, { areas });
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, e) => {
    events.push(e);
  });
  const ada = await signUp(app, 'ada');
  const laptop = await signIn(app, ada);
  const list = (await app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers })).json()
    .sessions as Array<{ identifier: string; current: boolean }>;
  t.equal(list.length, 2);
  const other = list.find((s) => !s.current)!;
  const res = await post(app, '/auth/sessions/revoke', ada.headers, { identifier: other.identifier });
  t.equal(res.statusCode, 200);
  t.match(events.at(-1), { type: 'session.revoked', sessionId: other.identifier, identityId: ada.identityId });
  t.equal(
    (await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(laptop) })).statusCode,
    401,
    'the revoked session is gone',
  );
  const again = await post(app, '/auth/sessions/revoke', ada.headers, { identifier: other.identifier });
  t.equal(again.statusCode, 404);
  t.equal(again.json().reason, 'unknown_session');

  const bob = await signUp(app, 'bob');
  const bobSession = (await app.inject({ method: 'GET', url: '/account?format=json', headers: bob.headers })).json()
    .sessions[0].identifier;
  t.equal(
    (await post(app, '/auth/sessions/revoke', ada.headers, { identifier: bobSession })).json().reason,
    'unknown_session',
    "another account's session is not found",
  );

  const own = list.find((s) => s.current)!;
  const self = await post(app, '/auth/sessions/revoke', ada.headers, { identifier: own.identifier });
  t.equal(self.statusCode, 200);
  t.match(String(self.headers['set-cookie']), /kp_session=;/, 'revoking this session clears its cookie');
  t.equal((await app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers })).statusCode, 401);
});

t.test('devices: revoking one ends all its sessions, then drops it from the ledger', async (t) => {
  const { app, services } = await build(t, { areas });
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, e) => {
    events.push(e);
  });
  const ada = await signUp(app, 'ada');
  const phone = await signIn(app, ada);
  const phone2 = await signIn(app, ada, { cookies: { kp_device: phone['kp_device']! } });
  const view = (await app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers })).json();
  t.equal(view.devices.length, 2);
  t.equal(view.sessions.length, 3);
  const phoneDevice = view.devices.find((d: { current: boolean }) => !d.current).deviceId;
  const res = await post(app, '/auth/devices/revoke', ada.headers, { deviceId: phoneDevice });
  t.match(res.json(), { ok: true, sessions: 2 });
  t.match(events.at(-1), { type: 'device.revoked', deviceId: phoneDevice, sessions: 2 });
  for (const jar of [phone, phone2])
    t.equal(
      (await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(jar) })).statusCode,
      401,
    );
  const after = (await app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers })).json();
  t.same(
    after.devices.map((d: { deviceId: string }) => d.deviceId),
    [view.devices.find((d: { current: boolean }) => d.current).deviceId],
  );
  const unknown = await post(app, '/auth/devices/revoke', ada.headers, { deviceId: phoneDevice });
  t.equal(unknown.statusCode, 404);
  t.equal(unknown.json().reason, 'unknown_device');
  const own = await post(app, '/auth/devices/revoke', ada.headers, { deviceId: after.devices[0].deviceId });
  t.match(String(own.headers['set-cookie']), /kp_session=;/, 'revoking this device signs this browser out');
});

t.test('sign-out ends the session and clears the cookie', async (t) => {
  const { app, services } = await build(t, { areas });
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, e) => {
    events.push(e);
  });
  const ada = await signUp(app, 'ada');
  const res = await post(app, '/auth/signout', ada.headers);
  t.equal(res.statusCode, 200);
  t.match(events.at(-1), { type: 'session.ended', identityId: ada.identityId });
  const jar = absorbCookies(res, { ...ada.cookies });
  t.notOk(jar['kp_session']);
  t.ok(jar['kp_device'], 'the device cookie stays');
  t.equal(
    (await app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers })).statusCode,
    401,
    'the old cookie no longer works',
  );
  const twice = await post(app, '/auth/signout', { origin: TEST_ISSUER });
  t.equal(twice.statusCode, 401);
});

t.test('every signed-in state-changing request must come from the issuer origin', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const cookie = ada.headers.cookie;
  for (const [url, payload] of [
    ['/auth/signout', undefined],
    ['/auth/profile', { displayName: 'x' }],
    ['/auth/passkeys/list', undefined],
  ] as const) {
    const foreign = await post(app, url, { cookie, origin: 'https://evil.example' }, payload);
    t.equal(foreign.statusCode, 403, url);
    t.equal(foreign.json().reason, 'origin_mismatch', url);
    const none = await post(app, url, { cookie }, payload);
    t.equal(none.json().reason, 'origin_mismatch', `${url} without Origin`);
  }
  t.equal(
    (await app.inject({ method: 'GET', url: '/account?format=json', headers: { cookie } })).statusCode,
    200,
    'reads need no Origin',
  );
});

t.test('sessions expire after the idle time and at the absolute lifetime', async (t) => {
  const clock = manualClock();
  const { app, config } = await build(t, { areas, now: clock.now });
  const ada = await signUp(app, 'ada');
  const idle = config.lifetimes.sessionIdle * 1000;
  const get = () => app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers });
  clock.advance(idle - 1000);
  t.equal((await get()).statusCode, 200, 'used just before the idle limit');
  clock.advance(idle - 1000);
  t.equal((await get()).statusCode, 200, 'the use moved the idle limit');
  clock.advance(idle + 1);
  t.equal((await get()).statusCode, 401, 'idle too long');

  const bob = await signUp(app, 'bob');
  const absolute = config.lifetimes.sessionAbsolute * 1000;
  let elapsed = 0;
  while (elapsed + idle / 2 < absolute) {
    clock.advance(idle / 2);
    elapsed += idle / 2;
    t.equal((await app.inject({ method: 'GET', url: '/account?format=json', headers: bob.headers })).statusCode, 200);
  }
  clock.advance(absolute - elapsed);
  t.equal(
    (await app.inject({ method: 'GET', url: '/account?format=json', headers: bob.headers })).statusCode,
    401,
    'never past the absolute lifetime',
  );
});

t.test('account operations need a session', async (t) => {
  const { app } = await build(t, { areas });
  for (const url of [
    '/auth/profile',
    '/auth/account/rename',
    '/auth/preferences',
    '/auth/sessions/revoke',
    '/auth/devices/revoke',
    '/auth/signout',
    '/auth/passkeys/list',
    '/auth/passkeys/rename',
    '/auth/passkeys/remove',
    '/auth/passkeys/add-options',
    '/auth/passkeys/add-verify',
    '/auth/step-up/options',
    '/auth/step-up/verify',
  ]) {
    const res = await app.inject({ method: 'POST', url, payload: {} });
    t.equal(res.statusCode, 401, url);
    t.equal(res.json().reason, 'unauthorized', url);
  }
});

t.test('on an https issuer the cookies are __Host- prefixed and Secure, and RP ID follows the host', async (t) => {
  const issuer = 'https://id.example.com';
  const { app } = await build(t, { areas, config: { issuer } });
  const begin = (
    await app.inject({ method: 'POST', url: '/auth/registration-options', payload: { username: 'ada' } })
  ).json();
  t.equal(begin.options.rp.id, 'id.example.com');
  const authenticator = new SoftAuthenticator(issuer);
  const done = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    payload: { user: 'ada', response: authenticator.create(begin.options), signupToken: begin.signupToken },
  });
  t.equal(done.statusCode, 200, done.body);
  const cookies = done.cookies as Array<{
    name: string;
    value: string;
    secure?: boolean;
    path?: string;
    domain?: string;
  }>;
  const session = cookies.find((c) => c.name === '__Host-kp_session');
  const device = cookies.find((c) => c.name === '__Host-kp_device');
  t.match(session, { secure: true, path: '/' });
  t.match(device, { secure: true, path: '/' });
  t.notOk(session?.domain, '__Host- cookies carry no Domain');
  const headers = { cookie: `__Host-kp_session=${session!.value}`, origin: issuer };
  t.equal((await app.inject({ method: 'GET', url: '/account?format=json', headers })).json().username, 'ada');
  t.equal(
    (await app.inject({ method: 'POST', url: '/auth/signout', headers: { ...headers, origin: TEST_ISSUER } })).json()
      .reason,
    'origin_mismatch',
    'the issuer origin is the https one',
  );
  t.equal((await app.inject({ method: 'POST', url: '/auth/signout', headers })).statusCode, 200);
  const plain = new SoftAuthenticator('http://id.example.com');
  const again = (
    await app.inject({ method: 'POST', url: '/auth/registration-options', payload: { username: 'bob' } })
  ).json();
  const wrong = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    payload: { user: 'bob', response: plain.create(again.options), signupToken: again.signupToken },
  });
  t.equal(wrong.json().reason, 'webauthn_origin_mismatch', 'http on an https issuer is another origin');
});

t.test('a route that checks origins itself opts out of the issuer-only Origin check', async (t) => {
  const { app } = await build(t, { areas, skipReady: true });
  await app.register(
    inPageContext(async (scope) => {
      scope.post('/test/own-origin', { config: { checksOwnOrigin: true } }, async (request) => ({
        ok: true,
        signedIn: Boolean(request.kp.session),
      }));
      scope.post('/test/default', async () => ({ ok: true }));
    }),
  );
  await app.ready();
  const ada = await signUp(app, 'ada');
  const foreign = { cookie: ada.headers.cookie, origin: 'https://rp.example' };
  t.same((await app.inject({ method: 'POST', url: '/test/own-origin', headers: foreign })).json(), {
    ok: true,
    signedIn: true,
  });
  t.equal(
    (await app.inject({ method: 'POST', url: '/test/default', headers: foreign })).json().reason,
    'origin_mismatch',
  );
});
