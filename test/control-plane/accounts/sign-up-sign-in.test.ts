import t from 'tap';
import { beginSignIn, finishSignIn } from '../../../control-plane/src/accounts/sign-in.js';
import { beginSignUp, finishSignUp } from '../../../control-plane/src/accounts/sign-up.js';
import type { SignInBrowser } from '../../../control-plane/src/sessions/start-session.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { build, openServices, TEST_ISSUER } from '../../helpers/build.js';
import { rejectionReason as reasonOf } from '../../helpers/reason-of.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';

// The sign-up and sign-in operations called directly with the control plane's services: no
// routes, no cookies. The HTTP shape of the same steps is covered in test/control-plane/passkeys/.

function browser(
  deviceId = 'dev_test',
  previous?: { id: string; identityId: string; tokenHash: string },
): SignInBrowser & { asked: number } {
  const b = { asked: 0, previous, deviceId: () => (b.asked++, deviceId) };
  return b;
}

t.test('sign-up creates the account, its first passkey and a session in one step', async (t) => {
  const { services } = await openServices(t);
  const authenticator = new SoftAuthenticator(TEST_ISSUER);
  const { options, signupToken } = await beginSignUp(services, { username: 'Ada', displayName: 'Ada L.' });
  t.equal(options.user.name, 'ada', 'usernames are case-folded');
  t.equal(await services.storage.identities.findByUsername('ada'), null, 'step 1 stores nothing');

  const who = browser();
  const done = await finishSignUp(services, { user: 'ada', response: authenticator.create(options), signupToken }, who);
  const identity = await services.storage.identities.get(done.identityId);
  t.equal(identity?.username, 'ada');
  t.equal(identity?.displayName, 'Ada L.');
  const passkeys = await services.storage.credentials.listByIdentity(done.identityId);
  t.same(
    passkeys.map((p) => p.label),
    ['Passkey 1'],
  );
  t.match(done.session.token, /^[A-Za-z0-9_-]{43}$/);
  const session = await services.storage.sessions.findLive(sha256Hex(done.session.token), services.now());
  t.equal(session?.sessionId, done.session.sessionId, 'only the hash of the token is stored, and it finds the session');
  t.equal(session?.deviceId, 'dev_test');
  t.equal(session?.assurance, 'passkey');
  t.equal(who.asked, 1, 'the device is asked for once, after the passkey verified');

  t.equal(
    await reasonOf(
      finishSignUp(services, { user: 'ada', response: authenticator.create(options), signupToken }, browser()),
    ),
    'challenge_unknown',
    'the signup token is one-use',
  );
  t.equal(await reasonOf(beginSignUp(services, { username: 'ada' })), 'username_taken');
});

t.test('a failed sign-up asks for no device and leaves nothing behind', async (t) => {
  const { services } = await openServices(t);
  const { options, signupToken } = await beginSignUp(services, { username: 'bob' });
  const who = browser();
  const response = new SoftAuthenticator('https://evil.example').create(options);
  t.equal(
    await reasonOf(finishSignUp(services, { user: 'bob', response, signupToken }, who)),
    'webauthn_origin_mismatch',
  );
  t.equal(who.asked, 0);
  t.equal(await services.storage.identities.findByUsername('bob'), null);

  const second = await beginSignUp(services, { username: 'bob' });
  t.equal(
    await reasonOf(
      finishSignUp(
        services,
        {
          user: 'carol',
          response: new SoftAuthenticator(TEST_ISSUER).create(second.options),
          signupToken: second.signupToken,
        },
        browser(),
      ),
    ),
    'challenge_mismatch',
    'the token belongs to the name it was started for',
  );
});

t.test('two sign-ups racing for one name: one account, the other refused', async (t) => {
  const { services } = await openServices(t);
  const first = await beginSignUp(services, { username: 'dup' });
  const second = await beginSignUp(services, { username: 'dup' });
  const results = await Promise.allSettled([
    finishSignUp(
      services,
      {
        user: 'dup',
        response: new SoftAuthenticator(TEST_ISSUER).create(first.options),
        signupToken: first.signupToken,
      },
      browser(),
    ),
    finishSignUp(
      services,
      {
        user: 'dup',
        response: new SoftAuthenticator(TEST_ISSUER).create(second.options),
        signupToken: second.signupToken,
      },
      browser(),
    ),
  ]);
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  t.equal(refused.reason.reason, 'username_taken');
});

t.test('sign-up closed: only the founder setup token opens it, once', async (t) => {
  const { services, logs } = await build(t, { areas: ['passkeys'], config: { 'signup.selfService': false } });
  t.equal(await reasonOf(beginSignUp(services, { username: 'someone' })), 'signup_closed');
  const setupToken = new URL(JSON.parse(logs.find((l) => l.includes('setupUrl'))!).setupUrl).searchParams.get('setup')!;
  const { options, signupToken } = await beginSignUp(services, { username: 'root', setupToken });
  const done = await finishSignUp(
    services,
    { user: 'root', response: new SoftAuthenticator(TEST_ISSUER).create(options), signupToken },
    browser(),
  );
  t.equal((await services.storage.identities.get(done.identityId))?.founder, true);
  t.equal(await reasonOf(beginSignUp(services, { username: 'second', setupToken })), 'invalid_setup_token');
});

t.test('sign-in: by username or usernameless; the session the browser had goes on under a new token', async (t) => {
  const { services } = await openServices(t);
  const authenticator = new SoftAuthenticator(TEST_ISSUER);
  const start = await beginSignUp(services, { username: 'erin' });
  const up = await finishSignUp(
    services,
    { user: 'erin', response: authenticator.create(start.options), signupToken: start.signupToken },
    browser(),
  );

  const named = await beginSignIn(services, 'erin');
  t.same(
    named.allowCredentials?.map((c) => c.id),
    [authenticator.credentials[0]!.id],
  );
  const previous = { id: up.session.sessionId, identityId: up.identityId, tokenHash: sha256Hex(up.session.token) };
  const who = browser('dev_test', previous);
  const signedIn = await finishSignIn(services, { user: 'erin', response: authenticator.get(named) }, who);
  t.equal(signedIn.identityId, up.identityId);
  t.equal(signedIn.session.sessionId, up.session.sessionId, 'the same session (its sid, grants and history stay)');
  t.not(signedIn.session.token, up.session.token, 'under a new token');
  t.equal(who.asked, 0, 'no new device is minted for it');
  t.equal(
    await services.storage.sessions.findLive(sha256Hex(up.session.token), services.now()),
    null,
    'the token the browser had finds nothing any more',
  );
  t.equal(
    (await services.storage.sessions.findLive(sha256Hex(signedIn.session.token), services.now()))?.sessionId,
    up.session.sessionId,
  );
  t.equal((await services.storage.sessions.listLive(up.identityId, services.now())).length, 1, 'one session');

  const usernameless = await beginSignIn(services, undefined);
  t.equal(usernameless.allowCredentials, undefined);
  const again = await finishSignIn(services, { response: authenticator.get(usernameless) }, browser());
  t.equal(again.identityId, up.identityId);
  t.equal(
    await reasonOf(finishSignIn(services, { response: authenticator.get(usernameless) }, browser())),
    'challenge_unknown',
    'each challenge answers once',
  );
});

t.test('sign-in: an unknown name gets decoys, and a passkey of another account is refused', async (t) => {
  const { services } = await openServices(t);
  const decoy = await beginSignIn(services, 'nobody');
  t.equal(decoy.allowCredentials?.length, 1);
  t.same((await beginSignIn(services, 'nobody')).allowCredentials, decoy.allowCredentials, 'the same decoy every time');

  const a = new SoftAuthenticator(TEST_ISSUER);
  const sa = await beginSignUp(services, { username: 'frank' });
  await finishSignUp(
    services,
    { user: 'frank', response: a.create(sa.options), signupToken: sa.signupToken },
    browser(),
  );
  const b = new SoftAuthenticator(TEST_ISSUER);
  const sb = await beginSignUp(services, { username: 'grace' });
  await finishSignUp(
    services,
    { user: 'grace', response: b.create(sb.options), signupToken: sb.signupToken },
    browser(),
  );

  const forGrace = await beginSignIn(services, 'grace');
  t.equal(
    await reasonOf(
      finishSignIn(services, { response: a.get({ ...forGrace, allowCredentials: undefined }) }, browser()),
    ),
    'unknown_credential',
    "frank's passkey cannot answer a sign-in started for grace",
  );
  const open = await beginSignIn(services, undefined);
  t.equal(
    await reasonOf(finishSignIn(services, { user: 'grace', response: a.get(open) }, browser())),
    'unknown_credential',
    'nor can it sign in naming grace',
  );
});
