import t from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { TEST_ISSUER } from '../../helpers/build.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['passkeys', 'account'] as const;
const GOOGLE_PASSWORD_MANAGER = 'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4';

t.test('a session signed in without a passkey is offered one until it declines or adds one', async (t) => {
  const { signIn } = await buildSignedIn(t, { areas });
  const account = async (browser: Awaited<ReturnType<typeof signIn>>['browser']) =>
    (await browser.get('/account?format=json', { accept: 'application/json' })).json();

  const { browser: recovered } = await signIn({ username: 'ada', assurance: 'recovery' });
  t.equal((await account(recovered)).passkeyUpgrade, true, 'after a recovery-code sign-in');
  t.equal((await account(recovered)).passkeyStepUpOnly, false, 'offered as a way to sign in');
  const declined = await recovered.post('/auth/passkeys/upgrade/decline');
  t.equal(declined.statusCode, 200, declined.body);
  t.same(declined.json(), { ok: true });
  t.equal((await account(recovered)).passkeyUpgrade, false, 'declined: not offered');
  const { browser: again } = await signIn({ username: 'ada', assurance: 'recovery' });
  t.equal((await account(again)).passkeyUpgrade, false, 'nor at the next sign-in within a month');

  const { browser: other } = await signIn({ username: 'grace', assurance: 'recovery' });
  t.equal((await account(other)).passkeyUpgrade, true);
  const soft = new SoftAuthenticator(TEST_ISSUER);
  const options = (await other.post('/auth/passkeys/add-options')).json().options;
  const added = await other.post('/auth/passkeys/add-verify', {
    response: soft.create(options, { aaguid: GOOGLE_PASSWORD_MANAGER }),
  });
  t.equal(added.statusCode, 200, added.body);
  t.equal(added.json().label, 'Google Password Manager', 'labelled after its authenticator');
  const after = await account(other);
  t.equal(after.passkeyUpgrade, false, 'a passkey added since the sign-in ends the offer');
  t.match(after.passkeys, [{ aaguid: GOOGLE_PASSWORD_MANAGER, authenticator: { name: 'Google Password Manager' } }]);
  const listed = (await other.post('/auth/passkeys/list')).json().passkeys;
  t.match(listed, [{ authenticator: { name: 'Google Password Manager', icon: /^data:image\/svg\+xml;base64,/ } }]);

  const { browser: withPasskey } = await signIn({ username: 'alan', assurance: 'passkey' });
  t.equal((await account(withPasskey)).passkeyUpgrade, false, 'a passkey sign-in is not offered one');
});

t.test('declining needs a session', async (t) => {
  const { app } = await buildSignedIn(t, { areas });
  const res = await app.inject({
    method: 'POST',
    url: '/auth/passkeys/upgrade/decline',
    headers: { origin: new URL(TEST_ISSUER).origin },
  });
  t.equal(res.statusCode, 401);
  t.equal(res.json().reason, 'unauthorized');
});
