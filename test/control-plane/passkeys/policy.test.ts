import t, { type Test } from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build, manualClock, tempDir, TEST_ISSUER } from '../../helpers/build.js';
import { headersFor, signIn, signUp, stepUp, type TestAccount } from '../../helpers/accounts.js';
import { makeTestPki, managedAccountWithPasskey } from '../../helpers/fido-metadata.js';
import { SoftAuthenticator, type CeremonyTweaks } from '../../helpers/soft-authenticator.js';
import { AuthenticatorMetadata } from '../../../control-plane/src/passkeys/metadata.js';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';

// The areas this suite exercises (docs/platform.md#test-tiers).
const areas = ['passkeys', 'orgs', 'account'] as const;

const KEY = '2fc0579f-8113-47ea-b116-bb5a8db9202a';
const OTHER = '6d44ba9b-f6ec-2e49-b930-0c8fe920cb73';
const REVOKED = 'ee882879-721c-4913-9775-3dfcce97072a';
const DAY = 86_400_000;

type App = Awaited<ReturnType<typeof build>>['app'];

/** A control plane with a test BLOB (Test Key, and a revoked key) and an org `acme` owned by `owner`. */
async function setUp(t: Test) {
  const dir = tempDir(t);
  const pki = makeTestPki(dir);
  const blobFile = join(dir, 'blob.jwt');
  writeFileSync(
    blobFile,
    await pki.blob([
      { aaguid: KEY, description: 'Test Key' },
      { aaguid: REVOKED, description: 'Recalled Key', statuses: ['FIDO_CERTIFIED_L1', 'REVOKED'] },
    ]),
  );
  const clock = manualClock();
  const { app, services } = await build(t, {
    areas,
    now: clock.now,
    config: { 'passkeys.mds.file': blobFile, 'passkeys.mds.rootCertificateFile': pki.rootFile },
  });
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, e) => {
    events.push(e);
  });
  const owner = await signUp(app, 'owner');
  await services.storage.orgs.create(
    { orgId: 'org_acme', slug: 'acme', name: 'Acme', website: null, createdAt: clock.now() },
    owner.identityId,
  );
  /** An account the org manages, with one passkey registered through the real ceremony, signed in. */
  const managed = async (username: string, tweaks: CeremonyTweaks = { aaguid: KEY }): Promise<TestAccount> => {
    const authenticator = new SoftAuthenticator(TEST_ISSUER);
    const identityId = await managedAccountWithPasskey(
      services,
      { username, orgId: 'org_acme', label: 'Work key' },
      authenticator,
      tweaks,
    );
    const account = { identityId, username, authenticator, cookies: {}, headers: headersFor({}) };
    const cookies = await signIn(app, account);
    return { ...account, cookies, headers: headersFor(cookies) };
  };
  const ownerSensitive = async () => {
    await stepUp(app, owner, owner.cookies);
  };
  const policy = (method: 'PUT' | 'POST', payload: Record<string, unknown>, who: TestAccount = owner, path = '') =>
    app.inject({ method, url: `/org/acme/passkey-policy${path}`, headers: who.headers, payload });
  return { app, services, clock, pki, owner, managed, ownerSensitive, policy, events };
}

const post = (app: App, url: string, account: TestAccount, payload?: Record<string, unknown>) =>
  app.inject({ method: 'POST', url, headers: account.headers, ...(payload ? { payload } : {}) });

t.test('registration: a managed account is asked for direct attestation and judged by the org policy', async (t) => {
  const { app, services, pki, managed, ownerSensitive, policy, events } = await setUp(t);
  const mia = await managed('mia');
  await ownerSensitive();
  const put = await policy('PUT', { aaguids_allowed: [KEY] });
  t.equal(put.statusCode, 200, put.body);
  t.match(put.json(), { ok: true, attestation: 'required', aaguids_allowed: [KEY], metadata: { loaded: true, no: 1 } });
  t.match(events.at(-1), { type: 'org.passkey_policy_set', orgId: 'org_acme', attestation: 'required', allowed: 1 });

  const add = async (tweaks: CeremonyTweaks) => {
    const options = (await post(app, '/auth/passkeys/add-options', mia)).json().options;
    t.equal(options.attestation, 'direct', 'the policy asks for the attestation');
    return post(app, '/auth/passkeys/add-verify', mia, {
      response: new SoftAuthenticator(TEST_ISSUER).create(options, tweaks),
    });
  };
  const refused = async (tweaks: CeremonyTweaks, why: string, name: string, what: string) => {
    const res = await add(tweaks);
    t.equal(res.statusCode, 403, what);
    t.match(res.json(), { ok: false, reason: 'authenticator_not_allowed', why, authenticator: { name } }, what);
    t.match(res.json().message, name, `${what}: the message names the authenticator`);
  };
  await refused(
    { aaguid: KEY },
    'attestation_required',
    'Test Key',
    "an AAGUID with attestation 'none' is only a claim",
  );
  await refused(
    { aaguid: KEY, packed: 'self' },
    'attestation_required',
    'Test Key',
    'self attestation proves no model',
  );
  await refused({ aaguid: OTHER, packed: pki.attestation(OTHER) }, 'not_allowed', OTHER, 'an AAGUID off the list');
  await refused({ aaguid: REVOKED, packed: pki.attestation(REVOKED) }, 'revoked', 'Recalled Key', 'a revoked model');

  const ok = await add({ aaguid: KEY, packed: pki.attestation(KEY) });
  t.equal(ok.statusCode, 200, ok.body);
  const stored = (await services.storage.credentials.listByIdentity(mia.identityId)).find(
    (c) => c.credId === ok.json().credId,
  );
  t.match(stored, { aaguid: KEY, attested: true }, 'a full attestation verified against the BLOB');

  // A certificate chain that ends elsewhere than the statement's root fails SimpleWebAuthn's check.
  const stranger = makeTestPki(tempDir(t), 'Stranger');
  const forged = await add({ aaguid: KEY, packed: stranger.attestation(KEY) });
  t.equal(forged.json().reason, 'webauthn_verification_failed', 'an attestation chain to another root');
});

t.test('a personal account is never asked for attestation, whatever its orgs set', async (t) => {
  const { app, owner, ownerSensitive, policy } = await setUp(t);
  await ownerSensitive();
  t.equal((await policy('PUT', { attestation: 'required', aaguids_denied: [OTHER] })).statusCode, 200);
  const options = (await post(app, '/auth/passkeys/add-options', owner)).json().options;
  t.equal(options.attestation, 'none');
  const res = await post(app, '/auth/passkeys/add-verify', owner, {
    response: new SoftAuthenticator(TEST_ISSUER).create(options, { aaguid: OTHER }),
  });
  t.equal(res.statusCode, 200, 'the org policy is for the accounts it manages');
});

t.test(
  'preview counts what a policy would refuse; existing passkeys get a grace, then are refused at sign-in',
  async (t) => {
    const { app, services, clock, managed, ownerSensitive, policy, owner } = await setUp(t);
    const mia = await managed('mia');
    await managed('leo', { aaguid: OTHER });

    const preview = await policy('POST', { aaguids_denied: [KEY], grace_days: 3 }, owner, '/preview');
    t.equal(preview.statusCode, 200, preview.body);
    t.match(preview.json(), {
      passkeys: 2,
      would_refuse: 1,
      grace_days: 3,
      refused: [{ username: 'mia', why: 'denied', authenticator: 'Test Key' }],
    });
    t.equal(await services.storage.orgs.passkeyPolicy('org_acme'), null, 'a preview changes nothing');

    clock.advance(1000);
    await ownerSensitive();
    const put = await policy('PUT', { aaguids_denied: [KEY], grace_days: 3 });
    t.match(put.json(), { would_refuse: 1, grace_days: 3 });
    t.equal(Date.parse(put.json().grace_until) - Date.parse(put.json().effective_at), 3 * DAY);

    // During the grace: the passkey signs in, and the account page asks for another.
    const cookies = await signIn(app, mia);
    const account = await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(cookies) });
    t.match(account.json().passkeysToReplace, {
      passkeys: [{ why: 'denied', authenticator: 'Test Key', label: 'Work key' }],
    });
    // Test Key is in the loaded FIDO metadata only, not in the community list: the list names it from there.
    t.match(account.json().passkeys, [{ aaguid: KEY, authenticator: { name: 'Test Key' } }]);
    const listed = await app.inject({ method: 'POST', url: '/auth/passkeys/list', headers: headersFor(cookies) });
    t.match(listed.json().passkeys, [{ aaguid: KEY, authenticator: { name: 'Test Key' } }]);
    const page = await app.inject({ method: 'GET', url: '/account', headers: headersFor(cookies) });
    t.match(page.body, /id="passkey-replace"/, 'the re-enrolment prompt');
    t.match(page.body, /Test Key/);

    clock.advance(3 * DAY);
    const begin = await app.inject({ method: 'GET', url: '/auth/assertion-options' });
    const refused = await app.inject({
      method: 'POST',
      url: '/auth/assertion-verify',
      headers: headersFor({}),
      payload: { response: mia.authenticator.get(begin.json().options) },
    });
    t.equal(refused.statusCode, 403);
    t.match(refused.json(), {
      reason: 'authenticator_not_allowed',
      why: 'denied',
      authenticator: { aaguid: KEY, name: 'Test Key' },
    });
    t.notOk(refused.headers['set-cookie'], 'no session');
  },
);

t.test('a passkey registered after the policy has no grace when the policy changes', async (t) => {
  const { app, clock, managed, ownerSensitive, policy } = await setUp(t);
  await ownerSensitive();
  t.equal((await policy('PUT', { aaguids_denied: [OTHER] })).statusCode, 200);
  clock.advance(1000);
  const mia = await managed('mia');
  clock.advance(1000);
  t.equal((await policy('PUT', { aaguids_denied: [KEY], grace_days: 0 })).statusCode, 200);
  await t.rejects(signIn(app, mia), /authenticator_not_allowed/, 'grace_days 0 refuses at once');
  // Its session from before the change cannot step up with it either.
  const begin = await post(app, '/auth/step-up/options', mia);
  t.equal(begin.statusCode, 200, begin.body);
  const stepped = await post(app, '/auth/step-up/verify', mia, {
    response: mia.authenticator.get(begin.json().options),
  });
  t.match(stepped.json(), { reason: 'authenticator_not_allowed', why: 'denied' }, 'nor does it step up');
});

t.test('refuses a policy from anyone but an owner at sensitive, and a malformed one', async (t) => {
  const { app, managed, ownerSensitive, policy, owner } = await setUp(t);
  t.equal((await policy('PUT', { aaguids_denied: [KEY] })).json().reason, 'insufficient_assurance');
  const mia = await managed('mia');
  t.equal((await policy('PUT', { aaguids_denied: [KEY] }, mia)).json().reason, 'not_found', 'a non-member');
  t.equal((await policy('POST', {}, mia, '/preview')).json().reason, 'not_found');
  await ownerSensitive();
  for (const bad of [
    { aaguids_denied: ['nope'] },
    { attestation: 'direct' },
    { aaguids_allowed: [KEY], aaguids_denied: [KEY] },
    { grace_days: 400 },
  ])
    t.equal((await policy('PUT', bad, owner)).json().reason, 'invalid_request', JSON.stringify(bad));
  const get = await app.inject({ method: 'GET', url: '/org/acme/passkey-policy', headers: owner.headers });
  t.match(get.json(), {
    ok: true,
    attestation: 'none',
    aaguids_denied: [],
    passkeys: 1,
    would_refuse: 0,
    grace_days: 14,
  });
});

t.test('the metadata is checked on every load; a BLOB under another root or not newer is not installed', async (t) => {
  const dir = tempDir(t);
  const pki = makeTestPki(dir);
  const file = join(dir, 'blob.jwt');
  writeFileSync(file, await pki.blob([{ aaguid: KEY, description: 'Test Key' }], 5));
  const warnings: string[] = [];
  const fetcher = {
    fetch: () => Promise.reject(new Error('unused')),
    check: () => Promise.reject(new Error('unused')),
  };
  const metadata = new AuthenticatorMetadata(
    { file, rootCertificateFile: pki.rootFile, refreshHours: 24 },
    fetcher,
    (m) => warnings.push(m),
  );
  await metadata.start();
  t.teardown(() => metadata.stop());
  t.match(metadata.loaded, { no: 5, entries: 1 });
  t.equal(metadata.entry(KEY.toUpperCase())?.description, 'Test Key');

  writeFileSync(file, await pki.blob([{ aaguid: KEY, description: 'Test Key', statuses: ['REVOKED'] }], 4));
  t.match(await metadata.refresh(), { no: 5 }, 'an older BLOB is ignored');
  t.equal(metadata.entry(KEY)?.refusal, null);

  const other = makeTestPki(tempDir(t), 'Other');
  writeFileSync(file, await other.blob([{ aaguid: KEY, description: 'Forged' }], 9));
  await t.rejects(metadata.refresh(), /certificate path could not be validated/);
  t.equal(metadata.entry(KEY)?.description, 'Test Key', 'the verified BLOB stays');

  writeFileSync(
    file,
    await pki.blob([{ aaguid: KEY, description: 'Test Key', statuses: ['USER_KEY_REMOTE_COMPROMISE'] }], 6),
  );
  await metadata.refresh();
  t.equal(metadata.entry(KEY)?.refusal, 'compromised', 'a newer BLOB replaces it');
  t.same(warnings, []);
});
