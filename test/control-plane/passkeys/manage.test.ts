import t from 'tap';
import { build, TEST_ISSUER } from '../../helpers/build.js';
import { signIn, signUp, type TestAccount } from '../../helpers/accounts.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['passkeys'] as const;

type App = Awaited<ReturnType<typeof build>>['app'];
const post = (app: App, url: string, account: TestAccount, payload?: Record<string, unknown>) =>
  app.inject({ method: 'POST', url, headers: account.headers, ...(payload ? { payload } : {}) });

async function addPasskey(app: App, account: TestAccount, authenticator = account.authenticator, label?: string) {
  const begin = await post(app, '/auth/passkeys/add-options', account);
  const response = authenticator.create(begin.json().options);
  return post(app, '/auth/passkeys/add-verify', account, { response, ...(label !== undefined ? { label } : {}) });
}

t.test('lists, adds, renames and removes passkeys; never the last one', async (t) => {
  const { app, services } = await build(t, { areas });
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, e) => {
    events.push(e);
  });
  const ada = await signUp(app, 'ada');
  const first = ada.authenticator.credentials[0]!.id;

  const options = (await post(app, '/auth/passkeys/add-options', ada)).json().options;
  t.same(
    options.excludeCredentials.map((c: { id: string }) => c.id),
    [first],
    'existing passkeys are excluded',
  );
  t.equal(options.authenticatorSelection.residentKey, 'required');
  const phone = new SoftAuthenticator(TEST_ISSUER);
  const added = await post(app, '/auth/passkeys/add-verify', ada, { response: phone.create(options) });
  t.equal(added.statusCode, 200, added.body);
  t.match(added.json(), { ok: true, label: 'Passkey 2', credId: phone.credentials[0]!.id });
  t.match(events.at(-1), { type: 'passkey.added', identityId: ada.identityId, credId: phone.credentials[0]!.id });

  const list = await post(app, '/auth/passkeys/list', ada);
  t.same(
    list.json().passkeys.map((p: { label: string }) => p.label),
    ['Passkey 1', 'Passkey 2'],
  );
  t.notMatch(list.body, /publicKey|counter/, 'no public keys or counters');

  t.equal((await post(app, '/auth/passkeys/rename', ada, { credId: first, label: ' Laptop ' })).statusCode, 200);
  t.equal((await post(app, '/auth/passkeys/list', ada)).json().passkeys[0].label, 'Laptop');
  t.equal(
    (await post(app, '/auth/passkeys/rename', ada, { credId: first, label: 'x'.repeat(65) })).json().reason,
    'label_invalid',
    'oversized label',
  );
  t.equal(
    (await post(app, '/auth/passkeys/rename', ada, { credId: first, label: '' })).json().reason,
    'label_invalid',
    'empty label',
  );
  t.equal(
    (await post(app, '/auth/passkeys/rename', ada, { credId: 'nope', label: 'x' })).json().reason,
    'unknown_passkey',
  );

  // the new passkey signs in on its own
  const phoneAccount = { ...ada, authenticator: phone };
  t.ok((await signIn(app, phoneAccount))['kp_session']);

  const removed = await post(app, '/auth/passkeys/remove', ada, { credId: first });
  t.equal(removed.statusCode, 200);
  t.match(events.at(-1), { type: 'passkey.removed', credId: first });
  const last = await post(app, '/auth/passkeys/remove', ada, { credId: phone.credentials[0]!.id });
  t.equal(last.statusCode, 409);
  t.equal(last.json().reason, 'last_passkey');
  t.equal(
    (await post(app, '/auth/passkeys/remove', ada, { credId: first })).json().reason,
    'unknown_passkey',
    'removing twice',
  );
  await t.rejects(signIn(app, ada), 'a removed passkey no longer signs in');
});

t.test('a passkey cannot be managed by another account', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const bob = await signUp(app, 'bob');
  await addPasskey(app, ada);
  const adaCred = ada.authenticator.credentials[0]!.id;
  t.equal((await post(app, '/auth/passkeys/remove', bob, { credId: adaCred })).json().reason, 'unknown_passkey');
  t.equal(
    (await post(app, '/auth/passkeys/rename', bob, { credId: adaCred, label: 'mine' })).json().reason,
    'unknown_passkey',
  );
});

t.test('refuses add-verify with a replayed, foreign or duplicate response', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const bob = await signUp(app, 'bob');
  const extra = new SoftAuthenticator(TEST_ISSUER);

  const options = (await post(app, '/auth/passkeys/add-options', ada)).json().options;
  const response = extra.create(options);
  t.equal((await post(app, '/auth/passkeys/add-verify', ada, { response, label: 'Key' })).statusCode, 200);
  const replay = await post(app, '/auth/passkeys/add-verify', ada, { response });
  t.equal(replay.json().reason, 'challenge_unknown');

  const bobOptions = (await post(app, '/auth/passkeys/add-options', bob)).json().options;
  const stolen = await post(app, '/auth/passkeys/add-verify', ada, {
    response: new SoftAuthenticator(TEST_ISSUER).create(bobOptions),
  });
  t.equal(stolen.json().reason, 'challenge_mismatch', 'a challenge issued to another account');

  const signinOptions = (await app.inject({ method: 'GET', url: '/auth/assertion-options' })).json().options;
  const wrongPurpose = await post(app, '/auth/passkeys/add-verify', ada, {
    response: new SoftAuthenticator(TEST_ISSUER).create({ ...options, challenge: signinOptions.challenge }),
  });
  t.equal(wrongPurpose.json().reason, 'challenge_mismatch', 'a sign-in challenge');

  // an id other than the attested credential id
  const mismatchOptions = (await post(app, '/auth/passkeys/add-options', ada)).json().options;
  const mismatch = new SoftAuthenticator(TEST_ISSUER).create(mismatchOptions) as any;
  mismatch.id = mismatch.rawId = ada.authenticator.credentials[0]!.id;
  t.equal(
    (await post(app, '/auth/passkeys/add-verify', ada, { response: mismatch })).json().reason,
    'webauthn_malformed',
    'id differs from the attested credential',
  );

  // the same authenticator key registered twice (the browser's excludeCredentials would stop it; the server does too)
  const dupOptions = (await post(app, '/auth/passkeys/add-options', ada)).json().options;
  const dup = ada.authenticator.create(dupOptions, { reuseCredentialId: ada.authenticator.credentials[0]!.id });
  const dupRes = await post(app, '/auth/passkeys/add-verify', ada, { response: dup });
  t.equal(dupRes.statusCode, 409);
  t.equal(dupRes.json().reason, 'credential_exists');

  const forged = [
    ['wrong origin', { origin: 'https://evil.example' }, 'webauthn_origin_mismatch'],
    ['wrong RP ID', { rpId: 'evil.example' }, 'webauthn_rp_mismatch'],
    ['no user verification', { noUserVerification: true }, 'user_verification_required'],
  ] as const;
  for (const [name, tweak, reason] of forged) {
    const o = (await post(app, '/auth/passkeys/add-options', ada)).json().options;
    const res = await post(app, '/auth/passkeys/add-verify', ada, {
      response: new SoftAuthenticator(TEST_ISSUER).create(o, tweak),
    });
    t.equal(res.json().reason, reason, name);
  }
  const o = (await post(app, '/auth/passkeys/add-options', ada)).json().options;
  const longLabel = await post(app, '/auth/passkeys/add-verify', ada, {
    response: new SoftAuthenticator(TEST_ISSUER).create(o),
    label: 'y'.repeat(100),
  });
  t.equal(longLabel.json().reason, 'label_invalid');
  t.equal(
    (await post(app, '/auth/passkeys/add-verify', ada, { response: 'junk' })).json().reason,
    'webauthn_malformed',
  );
  t.equal(
    (await post(app, '/auth/passkeys/list', ada)).json().passkeys.length,
    2,
    'only the one good passkey was added',
  );
});
