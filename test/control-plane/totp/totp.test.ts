import t from 'tap';
import { generateTotpCode } from '#lib/totp/totp.js';
import { requireTotpIfActive } from '../../../control-plane/src/totp/step-up-gate.js';
import { Browser } from '../../helpers/signed-in.js';
import { buildWatched } from '../../helpers/watched.js';

function wrongCode(right: string): string {
  return String((Number(right) + 500_000) % 1_000_000).padStart(6, '0');
}

t.test('setup returns secret, uri and an SVG QR code and leaves TOTP pending; a right code activates it', async (t) => {
  const { signIn, services, clock, events } = await buildWatched(t);
  const { browser, identityId } = await signIn({ username: 'ada' });
  const res = await browser.post('/auth/totp/setup');
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.match(body, { ok: true, totp: 'pending' });
  t.match(body.secret, /^[A-Z2-7]{32}$/);
  t.match(body.uri, /^otpauth:\/\/totp\/.*ada\?.*secret=/);
  t.match(body.qrSvg, /^<svg/);
  const stored = await services.storage.totp.get(identityId);
  t.equal(stored?.state, 'pending');
  t.notOk(stored!.sealedSecret.toString('latin1').includes(body.secret), 'the secret is sealed at rest');

  const ok = await browser.post('/auth/totp/confirm', { code: generateTotpCode(body.secret, clock.now()) });
  t.equal(ok.statusCode, 200);
  t.match(ok.json(), { ok: true, totp: 'active', receipt: /^[0-9a-f]{64}$/ });
  t.equal((await services.storage.totp.get(identityId))?.state, 'active');
  t.ok(events.some((e) => e.type === 'totp.enabled' && e.identityId === identityId));
});

t.test('refuses setup and confirm without a session, and malformed codes', async (t) => {
  const { app, signIn } = await buildWatched(t);
  const anonymous = new Browser(app);
  t.equal((await anonymous.post('/auth/totp/setup')).json().reason, 'unauthorized');
  t.equal((await anonymous.post('/auth/totp/confirm', { code: '123456' })).statusCode, 401);
  const { browser } = await signIn({ username: 'bob' });
  t.equal((await browser.post('/auth/totp/confirm', { code: '123456' })).json().reason, 'totp_not_pending');
  await browser.post('/auth/totp/setup');
  for (const code of ['12345', '1234567', 'abcdef']) {
    const res = await browser.post('/auth/totp/confirm', { code });
    t.equal(res.statusCode, 400);
    t.equal(res.json().reason, 'invalid_request');
  }
});

t.test('refuses a wrong code and a replayed one', async (t) => {
  const { app, signIn, clock } = await buildWatched(t);
  const { browser, identityId } = await signIn({ username: 'cy' });
  const { secret } = (await browser.post('/auth/totp/setup')).json();
  const code = generateTotpCode(secret, clock.now());
  const wrong = await browser.post('/auth/totp/confirm', { code: wrongCode(code) });
  t.equal(wrong.statusCode, 401);
  t.equal(wrong.json().reason, 'totp_invalid');
  t.equal((await browser.post('/auth/totp/confirm', { code })).statusCode, 200);

  // The confirming code's time step is spent: the step-up gate refuses it within its window.
  clock.advance(10_000);
  await t.rejects(requireTotpIfActive(app.kp, identityId, code), { name: 'KeyplaneError', reason: 'totp_replayed' });
  clock.advance(30_000);
  await t.resolves(requireTotpIfActive(app.kp, identityId, generateTotpCode(secret, clock.now())));
  await t.rejects(requireTotpIfActive(app.kp, identityId, generateTotpCode(secret, clock.now())), {
    name: 'KeyplaneError',
    reason: 'totp_replayed',
  });
});

t.test('setup cannot replace an active secret', async (t) => {
  const { signIn, clock } = await buildWatched(t);
  const { browser } = await signIn({ username: 'dee' });
  const { secret } = (await browser.post('/auth/totp/setup')).json();
  await browser.post('/auth/totp/confirm', { code: generateTotpCode(secret, clock.now()) });
  const again = await browser.post('/auth/totp/setup');
  t.equal(again.statusCode, 409);
  t.equal(again.json().reason, 'totp_already_active');
});

t.test('the step-up gate: off passes, active needs a right code', async (t) => {
  const { app, signIn, clock } = await buildWatched(t);
  const { browser, identityId } = await signIn({ username: 'eve' });
  t.equal(await requireTotpIfActive(app.kp, identityId, undefined), false, 'TOTP off: nothing to check');
  const { secret } = (await browser.post('/auth/totp/setup')).json();
  t.equal(await requireTotpIfActive(app.kp, identityId, undefined), false, 'a pending setup protects nothing yet');
  await browser.post('/auth/totp/confirm', { code: generateTotpCode(secret, clock.now()) });
  clock.advance(30_000);
  await t.rejects(requireTotpIfActive(app.kp, identityId, undefined), {
    name: 'KeyplaneError',
    reason: 'totp_required',
    status: 401,
  });
  await t.rejects(
    requireTotpIfActive(app.kp, identityId, '000000' === generateTotpCode(secret, clock.now()) ? '111111' : '000000'),
    { name: 'KeyplaneError', reason: 'totp_invalid' },
  );
  t.equal(await requireTotpIfActive(app.kp, identityId, generateTotpCode(secret, clock.now())), true);
});

t.test('locks TOTP for 15 minutes after 5 wrong codes, and records the lockout once', async (t) => {
  const { app, signIn, clock, events } = await buildWatched(t);
  const { browser, identityId } = await signIn({ username: 'fay' });
  const { secret } = (await browser.post('/auth/totp/setup')).json();
  await browser.post('/auth/totp/confirm', { code: generateTotpCode(secret, clock.now()) });
  clock.advance(30_000);
  const right = generateTotpCode(secret, clock.now());
  for (let i = 1; i <= 4; i++)
    await t.rejects(
      requireTotpIfActive(app.kp, identityId, wrongCode(right)),
      { name: 'KeyplaneError', reason: 'totp_invalid' },
      `failure ${i}`,
    );
  await t.rejects(
    requireTotpIfActive(app.kp, identityId, wrongCode(right)),
    { name: 'KeyplaneError', reason: 'locked_out', status: 429 },
    'the fifth locks',
  );
  await t.rejects(
    requireTotpIfActive(app.kp, identityId, right),
    { name: 'KeyplaneError', reason: 'locked_out' },
    'even the right code is refused while locked',
  );
  const locked = await browser.post('/auth/totp/setup');
  t.equal(locked.statusCode, 409, 'setup is not a code check');
  t.equal(events.filter((e) => e.type === 'lockout.started').length, 1);
  t.match(
    events.find((e) => e.type === 'lockout.started'),
    { identityId, method: 'totp', outcome: 'failure' },
  );
  clock.advance(900_000);
  t.equal(
    await requireTotpIfActive(app.kp, identityId, generateTotpCode(secret, clock.now())),
    true,
    'unlocked after 15 minutes',
  );
});

t.test('wrong confirm codes count toward the lockout too, answered with Retry-After', async (t) => {
  const { signIn, clock } = await buildWatched(t);
  const { browser } = await signIn({ username: 'gus' });
  const { secret } = (await browser.post('/auth/totp/setup')).json();
  const right = generateTotpCode(secret, clock.now());
  let last;
  for (let i = 0; i < 5; i++) last = await browser.post('/auth/totp/confirm', { code: wrongCode(right) });
  t.equal(last!.statusCode, 429);
  t.equal(last!.json().reason, 'locked_out');
  t.equal(last!.headers['retry-after'], '900');
});

t.test('disable needs a fresh session: sensitive, or a recovery sign-in within the step-up window', async (t) => {
  const { signIn, services, clock, events } = await buildWatched(t);
  const { browser, identityId } = await signIn({ username: 'hal' });
  const { secret } = (await browser.post('/auth/totp/setup')).json();
  await browser.post('/auth/totp/confirm', { code: generateTotpCode(secret, clock.now()) });

  const plain = await browser.post('/auth/totp/disable');
  t.equal(plain.statusCode, 403, 'a plain passkey session may not');
  t.match(plain.json(), { reason: 'insufficient_assurance', stepUp: '/auth/step-up' });

  const { browser: email } = await signIn({ username: 'hal', assurance: 'email' });
  t.equal((await email.post('/auth/totp/disable')).statusCode, 403, 'a magic-link session may not');

  const { browser: recovery } = await signIn({ username: 'hal', assurance: 'recovery' });
  clock.advance(301_000);
  t.equal(
    (await recovery.post('/auth/totp/disable')).statusCode,
    403,
    'a recovery sign-in older than the window may not',
  );

  const { browser: sensitive } = await signIn({ username: 'hal', assurance: 'sensitive' });
  const off = await sensitive.post('/auth/totp/disable');
  t.equal(off.statusCode, 200);
  t.match(off.json(), { ok: true, totp: 'off', receipt: /^[0-9a-f]{64}$/ });
  t.equal(await services.storage.totp.get(identityId), null);
  t.ok(events.some((e) => e.type === 'totp.disabled'));
  t.equal((await sensitive.post('/auth/totp/disable')).json().reason, 'totp_not_active');

  const { browser: fresh } = await signIn({ username: 'hal', assurance: 'recovery' });
  await fresh.post('/auth/totp/setup');
  t.equal(
    (await fresh.post('/auth/totp/disable')).statusCode,
    200,
    'a fresh recovery sign-in may cancel a pending setup',
  );
});
