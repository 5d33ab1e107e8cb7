import t from 'tap';
import { build, manualClock } from '../../helpers/build.js';
import { absorbCookies, headersFor, signUp, stepUp } from '../../helpers/accounts.js';
import { requireAssurance } from '../../../control-plane/src/plugins/session.js';
import { inPageContext } from '../../../control-plane/src/app.js';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';
import { generateTotpCode } from '#lib/totp/totp.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['passkeys', 'account', 'totp', 'docs'] as const;

t.test('a step-up makes the session sensitive for the window, then it reads as passkey', async (t) => {
  const clock = manualClock();
  const { app, services, config } = await build(t, { areas, now: clock.now, skipReady: true });
  await app.register(
    inPageContext(async (scope) => {
      scope.post('/test/sensitive', { onRequest: requireAssurance('sensitive') }, async () => ({ ok: true }));
      scope.get('/test/sensitive-page', { onRequest: requireAssurance('sensitive') }, async () => 'secret page');
    }),
  );
  await app.ready();
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, e) => {
    events.push(e);
  });
  const ada = await signUp(app, 'ada');
  const account = () => app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers });

  const before = await app.inject({ method: 'POST', url: '/test/sensitive', headers: ada.headers });
  t.equal(before.statusCode, 403);
  t.match(before.json(), { reason: 'insufficient_assurance', required: 'sensitive', stepUp: '/auth/step-up' });
  const page = await app.inject({
    method: 'GET',
    url: '/test/sensitive-page',
    headers: { ...ada.headers, accept: 'text/html' },
  });
  t.equal(page.statusCode, 303);
  t.equal(page.headers.location, '/auth/step-up?return=%2Ftest%2Fsensitive-page');

  const captured = { ...ada.headers };
  const sessionsBefore = (await account()).json().sessions;
  const res = await stepUp(app, ada, ada.cookies);
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { ok: true, assurance: 'sensitive', expiresAt: clock.now() + config.lifetimes.stepUp * 1000 });
  t.notOk('token' in res.json(), 'the new token travels only as a cookie');
  t.match(events.at(-1), { type: 'step_up.completed', identityId: ada.identityId, totp: false });
  t.not(ada.headers.cookie, captured.cookie, 'the step-up set a new session cookie');
  const sessions = (await account()).json().sessions;
  t.equal(sessions.length, 1, 'one session, not two');
  t.equal(sessions[0].identifier, sessionsBefore[0].identifier, 'the same session, under a new token');
  t.equal(sessions[0].assurance, 'sensitive');
  t.equal((await app.inject({ method: 'POST', url: '/test/sensitive', headers: ada.headers })).statusCode, 200);
  const stale = await app.inject({ method: 'POST', url: '/test/sensitive', headers: captured });
  t.equal(stale.statusCode, 401, 'the token from before the step-up never became sensitive: it is refused');
  t.equal(stale.json().reason, 'unauthorized');

  clock.advance(config.lifetimes.stepUp * 1000 - 1);
  t.equal((await account()).json().sessions[0].assurance, 'sensitive', 'still inside the window');
  clock.advance(1);
  t.equal((await account()).json().sessions[0].assurance, 'passkey', 'a lapsed step-up reads as passkey');
  t.equal((await app.inject({ method: 'POST', url: '/test/sensitive', headers: ada.headers })).statusCode, 403);
});

t.test('the step-up page needs a session and keeps return paths on this server', async (t) => {
  const { app } = await build(t, { areas });
  const anon = await app.inject({ method: 'GET', url: '/auth/step-up', headers: { accept: 'text/html' } });
  t.equal(anon.statusCode, 303);
  t.equal(anon.headers.location, '/auth');
  const ada = await signUp(app, 'ada');
  const ok = await app.inject({
    method: 'GET',
    url: '/auth/step-up?return=/account',
    headers: { ...headersFor(ada.cookies), accept: 'text/html' },
  });
  t.equal(ok.statusCode, 200);
  t.match(ok.body, /data-return="\/account"/);
  t.match(ok.body, /src="\/assets\/step-up.js"/);
  for (const evil of ['//evil.example/x', 'https://evil.example', '/\\evil.example']) {
    const res = await app.inject({
      method: 'GET',
      url: `/auth/step-up?return=${encodeURIComponent(evil)}`,
      headers: { ...headersFor(ada.cookies), accept: 'text/html' },
    });
    t.match(res.body, /data-return="\/account"/, `${evil} falls back to /account`);
  }
});

t.test("refuses step-ups with another account's passkey, another session's challenge or a replay", async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const bob = await signUp(app, 'bob');
  const verify = (headers: Record<string, string>, response: unknown) =>
    app.inject({ method: 'POST', url: '/auth/step-up/verify', headers, payload: { response } });

  const adaOptions = (await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: ada.headers })).json()
    .options;
  t.same(
    adaOptions.allowCredentials.map((c: { id: string }) => c.id),
    [ada.authenticator.credentials[0]!.id],
  );
  t.equal(adaOptions.userVerification, 'required');
  const fromBob = await verify(
    ada.headers,
    bob.authenticator.get(adaOptions, { credId: bob.authenticator.credentials[0]!.id }),
  );
  t.equal(fromBob.json().reason, 'unknown_credential');

  const bobOptions = (await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: bob.headers })).json()
    .options;
  const crossed = await verify(
    ada.headers,
    ada.authenticator.get(bobOptions, { credId: ada.authenticator.credentials[0]!.id }),
  );
  t.equal(crossed.json().reason, 'challenge_mismatch', 'a challenge issued to another session');

  const options = (await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: ada.headers })).json()
    .options;
  const response = ada.authenticator.get(options);
  const first = await verify(ada.headers, response);
  t.equal(first.statusCode, 200);
  t.equal((await verify(ada.headers, response)).json().reason, 'unauthorized', 'the old token ended with the step-up');
  absorbCookies(first, ada.cookies);
  ada.headers = headersFor(ada.cookies);
  t.equal((await verify(ada.headers, response)).json().reason, 'challenge_unknown', 'replayed');

  const signIn = (await app.inject({ method: 'GET', url: '/auth/assertion-options' })).json().options;
  t.equal(
    (await verify(ada.headers, ada.authenticator.get(signIn))).json().reason,
    'challenge_mismatch',
    'a sign-in challenge',
  );
  const o2 = (await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: ada.headers })).json().options;
  t.equal(
    (await verify(ada.headers, ada.authenticator.get(o2, { noUserVerification: true }))).json().reason,
    'user_verification_required',
  );
  const o3 = (await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: ada.headers })).json().options;
  t.equal(
    (await verify(ada.headers, ada.authenticator.get(o3, { badSignature: true }))).json().reason,
    'webauthn_verification_failed',
  );
  t.equal((await verify(ada.headers, { nope: true })).json().reason, 'webauthn_malformed');
});

t.test('with TOTP active a step-up needs the passkey and a code; amr gains otp', async (t) => {
  const clock = manualClock();
  const { app } = await build(t, { areas, now: clock.now });
  const ada = await signUp(app, 'ada');
  const setup = (await app.inject({ method: 'POST', url: '/auth/totp/setup', headers: ada.headers })).json();
  const confirm = await app.inject({
    method: 'POST',
    url: '/auth/totp/confirm',
    headers: ada.headers,
    payload: { code: generateTotpCode(setup.secret, clock.now()) },
  });
  t.equal(confirm.statusCode, 200, confirm.body);
  clock.advance(60_000);

  const noCode = await stepUp(app, ada, ada.cookies);
  t.equal(noCode.json().reason, 'totp_required');
  const options = (await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: ada.headers })).json()
    .options;
  const res = await app.inject({
    method: 'POST',
    url: '/auth/step-up/verify',
    headers: ada.headers,
    payload: { response: ada.authenticator.get(options), totpCode: generateTotpCode(setup.secret, clock.now()) },
  });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { ok: true, assurance: 'sensitive' });
  t.equal(
    (await app.inject({ method: 'GET', url: '/account?format=json', headers: ada.headers })).statusCode,
    401,
    'the token from before the step-up is refused',
  );
  absorbCookies(res, ada.cookies);
  const account = (
    await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(ada.cookies) })
  ).json();
  t.match(account, { totp: 'active', sessions: [{ assurance: 'sensitive' }] });
  t.equal(account.sessions.length, 1);
});

t.test('the passkey, step-up and account endpoints are in the OpenAPI document', async (t) => {
  const { app } = await build(t, { areas });
  const paths = (await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths as Record<
    string,
    Record<string, unknown>
  >;
  const expected: Array<[string, string]> = [
    ['/auth/registration-options', 'post'],
    ['/auth/registration-verify', 'post'],
    ['/auth/assertion-options', 'get'],
    ['/auth/assertion-verify', 'post'],
    ['/auth/passkeys/list', 'post'],
    ['/auth/passkeys/rename', 'post'],
    ['/auth/passkeys/remove', 'post'],
    ['/auth/passkeys/add-options', 'post'],
    ['/auth/passkeys/add-verify', 'post'],
    ['/auth/step-up', 'get'],
    ['/auth/step-up/options', 'post'],
    ['/auth/step-up/verify', 'post'],
    ['/auth/sessions/revoke', 'post'],
    ['/auth/devices/revoke', 'post'],
    ['/auth/signout', 'post'],
    ['/account', 'get'],
    ['/account/export', 'get'],
    ['/auth/profile', 'post'],
    ['/auth/account/rename', 'post'],
    ['/auth/preferences', 'post'],
  ];
  for (const [path, method] of expected) t.ok(paths[path]?.[method], `${method.toUpperCase()} ${path}`);
});
