import t from 'tap';
import { Browser } from '../../helpers/signed-in.js';
import { buildWatched } from '../../helpers/watched.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['recovery', 'account', 'receipts', 'passkeys'] as const;

function setup(t: { teardown(fn: () => unknown): void }, config?: Record<string, unknown>) {
  return buildWatched(t, () => (config ? { config } : {}));
}

t.test('regenerate shows 10 codes once and stores only keyed hashes', async (t) => {
  const { signIn, services, events } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'ada' });
  const res = await browser.post('/auth/recovery/regenerate');
  t.equal(res.statusCode, 200);
  const { codes } = res.json();
  t.equal(codes.length, 10);
  for (const code of codes) t.match(code, /^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$/);
  const stored = await services.storage.recoveryCodes.listUnused(identityId);
  t.equal(stored.length, 10);
  const dump = JSON.stringify(stored);
  for (const code of codes) t.notOk(dump.includes(code.replace(/-/g, '')), 'no code is stored in the clear');
  t.match(
    events.find((e) => e.type === 'recovery.regenerated'),
    { identityId, count: 10 },
  );

  const again = (await browser.post('/auth/recovery/regenerate')).json().codes;
  t.equal(again.filter((c: string) => codes.includes(c)).length, 0, 'a new set replaces the old one');
  const old = await new Browser(browser.app).post('/auth/recovery/verify', { user: 'ada', code: codes[0] });
  t.equal(old.json().reason, 'invalid_recovery_code', 'old codes stop working');
});

t.test('regenerate needs a session', async (t) => {
  const { app } = await setup(t);
  const res = await new Browser(app).post('/auth/recovery/regenerate');
  t.equal(res.statusCode, 401);
});

t.test('a code signs in at recovery assurance, once', async (t) => {
  const { app, signIn, services, events } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'bob' });
  const { codes } = (await browser.post('/auth/recovery/regenerate')).json();

  const lost = new Browser(app);
  const res = await lost.post('/auth/recovery/verify', {
    user: 'BOB',
    code: codes[2].toLowerCase().replace(/-/g, ' '),
  });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { ok: true, identityId, home: '/account', remaining: 9 });
  t.ok(lost.cookies.get('kp_session'), 'a session cookie is set');
  const sessions = await services.storage.sessions.listLive(identityId, services.now());
  const created = sessions.find((s) => s.assurance === 'recovery');
  t.ok(created, 'the session is at recovery');
  t.same(created!.amr, ['otp']);
  t.match(
    events.find((e) => e.type === 'recovery.used'),
    { identityId, remaining: 9 },
  );
  t.match(
    events.find((e) => e.type === 'session.started' && e.method === 'recovery'),
    { identityId, assurance: 'recovery' },
  );

  const reused = await new Browser(app).post('/auth/recovery/verify', { user: 'bob', code: codes[2] });
  t.equal(reused.statusCode, 401);
  t.equal(reused.json().reason, 'invalid_recovery_code', 'a used code is refused');
});

t.test('an unknown account gets the same refusal as a wrong code', async (t) => {
  const { app } = await setup(t);
  const res = await new Browser(app).post('/auth/recovery/verify', { user: 'nobody', code: 'ABCD-EFGH-JKMN-PQRS' });
  t.equal(res.statusCode, 401);
  t.equal(res.json().reason, 'invalid_recovery_code');
});

t.test('locks recovery for the account after 5 wrong codes, with one lockout event', async (t) => {
  const { app, signIn, events, clock } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'cy' });
  const { codes } = (await browser.post('/auth/recovery/regenerate')).json();
  const guesser = new Browser(app);
  for (let i = 1; i <= 4; i++) {
    t.equal(
      (await guesser.post('/auth/recovery/verify', { user: 'cy', code: `ZZZZ-ZZZZ-ZZZZ-ZZZ${i}` })).json().reason,
      'invalid_recovery_code',
    );
  }
  const fifth = await guesser.post('/auth/recovery/verify', { user: 'cy', code: 'ZZZZ-ZZZZ-ZZZZ-ZZZ5' });
  t.equal(fifth.statusCode, 429);
  t.equal(fifth.json().reason, 'locked_out');
  t.equal(fifth.headers['retry-after'], '900');
  const right = await guesser.post('/auth/recovery/verify', { user: 'cy', code: codes[0] });
  t.equal(right.json().reason, 'locked_out', 'the right code waits for the lock too');
  t.equal(events.filter((e) => e.type === 'lockout.started').length, 1);
  t.match(
    events.find((e) => e.type === 'lockout.started'),
    { identityId, method: 'recovery' },
  );
  clock.advance(900_000);
  t.equal(
    (await guesser.post('/auth/recovery/verify', { user: 'cy', code: codes[0] })).statusCode,
    200,
    'unlocked after 15 minutes',
  );
});

t.test(
  "a stranger's wrong codes lock out the stranger's address, not the owner's right code from elsewhere",
  async (t) => {
    const { app, signIn, clock } = await setup(t, { 'limits.lockoutThreshold': 2 });
    const { browser } = await signIn({ username: 'dee' });
    const { codes } = (await browser.post('/auth/recovery/regenerate')).json();
    const verify = (remoteAddress: string, code: string) =>
      app.inject({
        method: 'POST',
        url: '/auth/recovery/verify',
        remoteAddress,
        headers: { accept: 'application/json' },
        payload: { user: 'dee', code },
      });
    const stranger = '198.51.100.7';
    t.equal((await verify(stranger, 'ZZZZ-ZZZZ-ZZZZ-ZZZ1')).json().reason, 'invalid_recovery_code');
    const locked = await verify(stranger, 'ZZZZ-ZZZZ-ZZZZ-ZZZ2');
    t.equal(locked.statusCode, 429);
    t.equal(locked.json().reason, 'locked_out');
    t.equal((await verify(stranger, codes[0])).json().reason, 'locked_out', "the stranger's address stays locked");

    const owner = await verify('203.0.113.9', codes[0]);
    t.equal(owner.statusCode, 200, `the owner's right code from another address works: ${owner.body}`);

    // The attack of issue #47: ten addresses, each guessing up to its own threshold, put the
    // account under attack (20 wrong codes here). That refuses every address that guessed wrong,
    // the right code included, and never the owner's right code from an address that did not.
    for (let n = 1; n <= 10; n++)
      for (const guess of ['ZZZZ-ZZZZ-ZZZZ-ZZZ3', 'ZZZZ-ZZZZ-ZZZZ-ZZZ4']) await verify(`192.0.2.${n}`, guess);
    t.equal((await verify('192.0.2.1', codes[1])).json().reason, 'locked_out', 'a guessing address stays refused');
    const fresh = await verify('203.0.113.10', codes[1]);
    t.equal(fresh.statusCode, 200, `the owner's right code from a clean address works: ${fresh.body}`);
    // Overall guessing stays bounded: a new address gets one try, then is refused like the others.
    const oneTry = await verify('192.0.2.50', 'ZZZZ-ZZZZ-ZZZZ-ZZZ5');
    t.equal(oneTry.statusCode, 429, 'a wrong guess while the account is under attack is refused');
    t.equal((await verify('192.0.2.50', codes[2])).json().reason, 'locked_out', 'and that address stays refused');
    clock.advance(900_000);
    t.equal((await verify('192.0.2.50', codes[2])).statusCode, 200, 'until the window ends');
  },
);

t.test('is rate-limited per IP across accounts', async (t) => {
  const { app } = await setup(t, { 'limits.authPerIpPerMinute': 3 });
  const guesser = new Browser(app);
  for (let i = 0; i < 3; i++)
    t.equal(
      (await guesser.post('/auth/recovery/verify', { user: `user${i}`, code: 'ABCD-EFGH-JKMN-PQRS' })).statusCode,
      401,
    );
  const limited = await guesser.post('/auth/recovery/verify', { user: 'user9', code: 'ABCD-EFGH-JKMN-PQRS' });
  t.equal(limited.statusCode, 429);
  t.equal(limited.json().reason, 'rate_limited');
  t.ok(Number(limited.headers['retry-after']) > 0);
});

t.test('refuses a sign-in POST from another origin and malformed bodies', async (t) => {
  const { app } = await setup(t);
  const b = new Browser(app);
  const foreign = await b.post(
    '/auth/recovery/verify',
    { user: 'ada', code: 'ABCD-EFGH-JKMN-PQRS' },
    { origin: 'https://evil.example' },
  );
  t.equal(foreign.json().reason, 'origin_mismatch');
  t.equal((await b.post('/auth/recovery/verify', { user: 'ada' })).json().reason, 'invalid_request');
  t.equal(
    (await b.post('/auth/recovery/verify', { user: 'ada', code: 'x'.repeat(65) })).json().reason,
    'invalid_request',
  );
});

t.test('is rate-limited per account name, known or not', async (t) => {
  const { app } = await setup(t, { 'limits.authPerAccountPerMinute': 2, 'limits.lockoutThreshold': 10 });
  for (const user of ['ghost', 'Ghost'])
    t.equal(
      (await new Browser(app).post('/auth/recovery/verify', { user, code: 'ABCD-EFGH-JKMN-PQRS' })).statusCode,
      401,
    );
  const limited = await new Browser(app).post('/auth/recovery/verify', { user: 'GHOST', code: 'ABCD-EFGH-JKMN-PQRS' });
  t.equal(limited.json().reason, 'rate_limited');
});

t.test('responses carry the receipts of what they changed', async (t) => {
  const { app, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'rex' });
  const regenerated = (await browser.post('/auth/recovery/regenerate')).json();
  t.match(regenerated.receipt, /^[0-9a-f]{64}$/);
  const used = (
    await new Browser(app).post('/auth/recovery/verify', { user: 'rex', code: regenerated.codes[0] })
  ).json();
  t.match(used.receipt, /^[0-9a-f]{64}$/);
  const receipt = await app.inject({ method: 'GET', url: `/receipts/${used.receipt}` });
  t.equal(receipt.statusCode, 200, 'the receipt can be looked up by its hash');
});

t.test('works as a plain HTML form without JavaScript', async (t) => {
  const { app, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'nojs' });
  const { codes } = (await browser.post('/auth/recovery/regenerate')).json();
  const page = await app.inject({ method: 'GET', url: '/auth/recovery', headers: { accept: 'text/html' } });
  t.equal(page.statusCode, 200);
  t.match(page.body, /<form method="post" action="\/auth\/recovery\/verify">/);
  t.match(page.body, /<label for="recovery-code">/);

  const form = new Browser(app);
  const html = { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' };
  const wrong = await form.post('/auth/recovery/verify', 'user=nojs&code=ZZZZ-ZZZZ-ZZZZ-ZZZZ', html);
  t.equal(wrong.statusCode, 401);
  t.match(wrong.headers['content-type'], /^text\/html/);
  t.match(wrong.body, /<p id="form-error" role="alert"/);
  t.match(wrong.body, /invalid_recovery_code/);
  t.match(
    wrong.body,
    /id="recovery-user"[^>]* aria-invalid="true" aria-describedby="form-error" autofocus>/,
    'the first field is tied to the message and takes the focus',
  );
  t.match(wrong.body, /id="recovery-code"[^>]* aria-invalid="true" aria-describedby="form-error">/);
  t.match(wrong.body, /value="nojs"/, 'the username is kept');
  const right = await form.post('/auth/recovery/verify', `user=nojs&code=${encodeURIComponent(codes[0])}`, html);
  t.equal(right.statusCode, 303);
  t.equal(right.headers.location, '/account');
  t.ok(form.cookies.get('kp_session'));
});

t.test('with a real passkey account: codes made in its session sign it in at recovery', async (t) => {
  const { build } = await import('../../helpers/build.js');
  const { signUp, absorbCookies, headersFor } = await import('../../helpers/accounts.js');
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'realada');
  const made = await app.inject({ method: 'POST', url: '/auth/recovery/regenerate', headers: ada.headers });
  t.equal(made.statusCode, 200);
  const jar = {};
  const res = await app.inject({
    method: 'POST',
    url: '/auth/recovery/verify',
    payload: { user: 'RealAda', code: made.json().codes[9] },
  });
  t.equal(res.statusCode, 200);
  absorbCookies(res, jar);
  const account = await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(jar) });
  t.match(account.json(), { identityId: ada.identityId });
  t.ok(
    account
      .json()
      .sessions.some((s: { assurance: string; current: boolean }) => s.assurance === 'recovery' && s.current),
    'the new session is at recovery',
  );
});
