import t from 'tap';
import { build, tempDir, TEST_ISSUER } from '../../helpers/build.js';
import { headersFor, setupTokenFrom, signUp } from '../../helpers/accounts.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
// The passkeys area logs the setup link when it is registered.
const areas = ['passkeys', 'pages', 'account'] as const;

const founderOf = async (app: Awaited<ReturnType<typeof build>>['app'], headers: Record<string, string>) =>
  (await app.inject({ method: 'GET', url: '/account?format=json', headers })).json().founder;

t.test('a fresh install logs a one-time setup link that creates the founder', async (t) => {
  const dataDir = tempDir(t);
  const { app, logs, services } = await build(t, { areas, dataDir, config: { 'signup.selfService': false } });
  const line = logs.find((l) => l.includes('setupUrl'));
  t.ok(line, 'the setup link is logged');
  t.match(JSON.parse(line!).setupUrl, new RegExp(`^${TEST_ISSUER}/auth\\?setup=[A-Za-z0-9_-]{43}$`));
  const token = setupTokenFrom(logs);

  const page = await app.inject({ method: 'GET', url: `/auth?setup=${token}` });
  t.match(page.body, /founder/, 'the page says what the link does');
  t.match(
    page.body,
    '<button type="button" data-action="signup">Create the founder account</button>',
    'its first button says it creates the founder account',
  );
  const german = await app.inject({ method: 'GET', url: `/auth?setup=${token}&lang=de` });
  t.match(german.body, '<button type="button" data-action="signup">Gründerkonto erstellen</button>');
  const plain = await app.inject({ method: 'GET', url: '/auth' });
  t.notMatch(plain.body, /founder account/, 'the ordinary sign-in page offers no founder account');

  const closed = await app.inject({
    method: 'POST',
    url: '/auth/registration-options',
    payload: { username: 'someone' },
  });
  t.equal(closed.json().reason, 'signup_closed', 'ordinary sign-up stays closed');

  const founder = await signUp(app, 'root', { setupToken: token });
  t.equal(await founderOf(app, founder.headers), true);

  const again = await app.inject({
    method: 'POST',
    url: '/auth/registration-options',
    payload: { username: 'second', setupToken: token },
  });
  t.equal(again.statusCode, 403);
  t.equal(again.json().reason, 'invalid_setup_token', 'the link is one-use');
  const wrong = await app.inject({
    method: 'POST',
    url: '/auth/registration-options',
    payload: { username: 'second', setupToken: 'x'.repeat(43) },
  });
  t.equal(wrong.json().reason, 'invalid_setup_token');

  // A restart: the first process lets go of the database before the second opens it.
  await app.close();
  await services.close();
  const restarted = await build(t, { areas, dataDir });
  t.notOk(
    restarted.logs.some((l) => l.includes('setupUrl')),
    'no setup link once a founder exists',
  );
});

t.test('with self-service on, ordinary accounts are users and the link still makes the founder', async (t) => {
  const { app, logs, services } = await build(t, { areas });
  const token = setupTokenFrom(logs);
  const early = await signUp(app, 'early');
  t.equal(await founderOf(app, early.headers), false, 'an ordinary sign-up is not the founder');
  const founder = await signUp(app, 'owner', { setupToken: token });
  t.equal(await founderOf(app, founder.headers), true);
  t.equal(await services.storage.operators.roleOf(founder.identityId), 'operator', 'the founder is an operator');
  t.equal(await services.storage.operators.roleOf(early.identityId), null, 'an ordinary account holds no role');
  const later = await signUp(app, 'later');
  t.equal(await founderOf(app, later.headers), false);
});

t.test('a failed founder sign-up does not burn the link', async (t) => {
  const { app, logs } = await build(t, { areas });
  const token = setupTokenFrom(logs);
  const first = (
    await app.inject({
      method: 'POST',
      url: '/auth/registration-options',
      payload: { username: 'owner', setupToken: token },
    })
  ).json();
  await signUp(app, 'owner');
  const res = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    payload: {
      user: 'owner',
      response: new SoftAuthenticator(TEST_ISSUER).create(first.options),
      signupToken: first.signupToken,
    },
  });
  t.equal(res.json().reason, 'username_taken');
  const founder = await signUp(app, 'owner2', { setupToken: token });
  t.equal(await founderOf(app, headersFor(founder.cookies)), true, 'the link still works');
});

t.test('two founder sign-ups racing on one link: only one wins', async (t) => {
  const { app, logs } = await build(t, { areas });
  const token = setupTokenFrom(logs);
  const a = (
    await app.inject({
      method: 'POST',
      url: '/auth/registration-options',
      payload: { username: 'alpha', setupToken: token },
    })
  ).json();
  const b = (
    await app.inject({
      method: 'POST',
      url: '/auth/registration-options',
      payload: { username: 'beta', setupToken: token },
    })
  ).json();
  const finish = (s: { options: unknown; signupToken: string }, user: string) =>
    app.inject({
      method: 'POST',
      url: '/auth/registration-verify',
      payload: { user, response: new SoftAuthenticator(TEST_ISSUER).create(s.options), signupToken: s.signupToken },
    });
  const [ra, rb] = await Promise.all([finish(a, 'alpha'), finish(b, 'beta')]);
  t.same([ra.statusCode, rb.statusCode].sort(), [200, 403]);
  t.equal((ra.statusCode === 403 ? ra : rb).json().reason, 'invalid_setup_token');
});
