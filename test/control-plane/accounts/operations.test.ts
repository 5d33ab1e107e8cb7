import t from 'tap';
import { beginSignUp, finishSignUp } from '../../../control-plane/src/accounts/sign-up.js';
import { renameAccount } from '../../../control-plane/src/accounts/profile.js';
import { regenerateRecoveryCodes, signInWithRecoveryCode } from '../../../control-plane/src/recovery/codes.js';
import { revokeDevice, revokeSession } from '../../../control-plane/src/sessions/end-session.js';
import type { SignInBrowser } from '../../../control-plane/src/sessions/start-session.js';
import { openServices, TEST_ISSUER } from '../../helpers/build.js';
import { rejectionReason as reasonOf } from '../../helpers/reason-of.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';

// Account, session and backup-code operations called with the control plane's services, no
// routes; their HTTP shape is covered in test/control-plane/accounts/ and recovery/.

const browser = (deviceId: string): SignInBrowser => ({ deviceId: () => deviceId });

async function signUp(
  services: Awaited<ReturnType<typeof openServices>>['services'],
  username: string,
  deviceId = 'dev_one',
) {
  const { options, signupToken } = await beginSignUp(services, { username });
  const done = await finishSignUp(
    services,
    { user: username, response: new SoftAuthenticator(TEST_ISSUER).create(options), signupToken },
    browser(deviceId),
  );
  return { identityId: done.identityId, sessionId: done.session.sessionId };
}

t.test('renaming to the current name records nothing; a taken name is refused', async (t) => {
  const { services } = await openServices(t);
  const ada = await signUp(services, 'ada');
  await signUp(services, 'bob');
  t.same(await renameAccount(services, ada.identityId, 'ada'), { username: 'ada', aliases: [] });
  t.equal(await reasonOf(renameAccount(services, ada.identityId, 'bob')), 'username_taken');
  const renamed = await renameAccount(services, ada.identityId, 'Ada2');
  t.same([renamed.username, renamed.aliases], ['ada2', ['ada']], 'the old name stays as an alias');
});

t.test('revoking a device ends its sessions only; an unknown device or session is refused', async (t) => {
  const { services } = await openServices(t);
  const ada = await signUp(services, 'ada', 'dev_one');
  const other = await signUp(services, 'bob', 'dev_two');
  t.equal(
    await reasonOf(revokeDevice(services, ada, 'dev_two')),
    'unknown_device',
    "another account's device is unknown here",
  );
  t.equal(
    await reasonOf(revokeSession(services, ada, other.sessionId)),
    'unknown_session',
    "another account's session is unknown here",
  );
  const revoked = await revokeDevice(services, ada, 'dev_one');
  t.equal(revoked.sessions, 1);
  t.same(await services.storage.sessions.listLive(ada.identityId, services.now()), []);
  t.equal(
    (await services.storage.sessions.listLive(other.identityId, services.now())).length,
    1,
    "bob's session lives on",
  );
  t.same(await services.storage.devices.list(ada.identityId), [], 'the device left the ledger');
});

t.test('a backup code signs in once at recovery; a wrong code and an unknown name get the same refusal', async (t) => {
  const { services } = await openServices(t);
  const ada = await signUp(services, 'ada');
  const { codes } = await regenerateRecoveryCodes(services, ada);
  t.equal(codes.length, 10);
  t.equal(
    await reasonOf(signInWithRecoveryCode(services, 'nobody', codes[0]!, browser('dev_x'), '203.0.113.1')),
    'invalid_recovery_code',
  );
  t.equal(
    await reasonOf(signInWithRecoveryCode(services, 'ada', 'not-a-code', browser('dev_x'), '203.0.113.1')),
    'invalid_recovery_code',
  );
  const signedIn = await signInWithRecoveryCode(services, 'ADA', codes[0]!, browser('dev_x'), '203.0.113.1');
  t.same([signedIn.identityId, signedIn.remaining], [ada.identityId, 9]);
  const live = await services.storage.sessions.listLive(ada.identityId, services.now());
  t.ok(
    live.some((s) => s.deviceId === 'dev_x' && s.assurance === 'recovery'),
    'the new session is at assurance recovery',
  );
  t.equal(
    await reasonOf(signInWithRecoveryCode(services, 'ada', codes[0]!, browser('dev_x'), '203.0.113.1')),
    'invalid_recovery_code',
    'a used code does not work again',
  );
});
