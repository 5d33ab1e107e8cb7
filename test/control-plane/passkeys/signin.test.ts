import t from 'tap';
import { build, TEST_ISSUER } from '../../helpers/build.js';
import { absorbCookies, headersFor, signIn, signUp } from '../../helpers/accounts.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['passkeys', 'account'] as const;

type App = Awaited<ReturnType<typeof build>>['app'];

async function options(app: App, user?: string) {
  const res = await app.inject({
    method: 'GET',
    url: `/auth/assertion-options${user !== undefined ? `?user=${encodeURIComponent(user)}` : ''}`,
  });
  return res;
}

function verify(app: App, payload: Record<string, unknown>, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url: '/auth/assertion-verify', payload, headers });
}

t.test('signs in usernameless and with a username, each time a new session', async (t) => {
  const { app, services } = await build(t, { areas });
  const account = await signUp(app, 'ada');
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, event) => {
    events.push(event);
  });

  const usernameless = (await options(app)).json().options;
  t.equal(usernameless.rpId, 'localhost');
  t.equal(usernameless.userVerification, 'required');
  t.notOk(usernameless.allowCredentials?.length, 'usernameless: no credentials listed');
  const res = await verify(app, { response: account.authenticator.get(usernameless) });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), { ok: true, identityId: account.identityId, home: '/account' });
  const jar = absorbCookies(res);
  t.ok(jar['kp_session'] && jar['kp_device']);
  t.match(events, [{ type: 'session.started', method: 'passkey', identityId: account.identityId }]);

  const named = (await options(app, 'ADA')).json().options;
  t.same(
    named.allowCredentials.map((c: { id: string }) => c.id),
    [account.authenticator.credentials[0]!.id],
    "the account's passkeys are offered",
  );
  const byName = await verify(
    app,
    { user: 'Ada', response: account.authenticator.get(named), deviceId: 'dev_ignored' },
    headersFor(jar),
  );
  t.equal(byName.statusCode, 200);
  const jar2 = absorbCookies(byName, { ...jar });
  t.equal(jar2['kp_device'], jar['kp_device'], 'the device cookie stays');
  const view = await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(jar2) });
  const devices = view.json().devices as Array<{ deviceId: string }>;
  t.notOk(
    devices.some((d) => d.deviceId === 'dev_ignored'),
    'a deviceId in the body never names the device',
  );
  t.ok(view.json().passkeys[0].lastUsedAt, 'last use is recorded');
});

t.test(
  'an unknown username gets options of the same shape with stable decoy credential ids, then cannot sign in',
  async (t) => {
    const { app } = await build(t, { areas });
    const account = await signUp(app, 'ada');
    const res = await options(app, 'nobody');
    t.equal(res.statusCode, 200, 'no hint that the name does not exist');
    const known = (await options(app, 'ada')).json().options;
    const decoy = res.json().options;
    t.same(Object.keys(decoy).sort(), Object.keys(known).sort(), 'the same members as for a real account');
    t.equal(
      decoy.allowCredentials.length,
      1,
      'an unknown name lists a credential too, like an account with one passkey',
    );
    t.same(
      Object.keys(decoy.allowCredentials[0]).sort(),
      Object.keys(known.allowCredentials[0]).sort(),
      'each descriptor has the same shape',
    );
    t.match(decoy.allowCredentials[0].id, /^[A-Za-z0-9_-]{22}$/, 'a 16-byte credential id');
    t.same(
      (await options(app, 'nobody')).json().options.allowCredentials,
      decoy.allowCredentials,
      'the same name always gets the same decoy',
    );
    t.not(
      (await options(app, 'somebody')).json().options.allowCredentials[0].id,
      decoy.allowCredentials[0].id,
      'another name another decoy',
    );
    t.not(decoy.allowCredentials[0].id, account.authenticator.credentials[0]!.id);
    const attempt = await verify(app, {
      response: account.authenticator.get(res.json().options, { credId: account.authenticator.credentials[0]!.id }),
    });
    t.equal(attempt.statusCode, 401);
    t.equal(attempt.json().reason, 'unknown_credential');
    const bad = await options(app, 'no way');
    t.equal(bad.json().reason, 'invalid_username');
  },
);

t.test('refuses replayed, foreign, forged and cloned assertions with specific reasons', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const bob = await signUp(app, 'bob');
  const fresh = async (user?: string) => (await options(app, user)).json().options;

  const first = ada.authenticator.get(await fresh());
  t.equal((await verify(app, { response: first })).statusCode, 200);
  const replay = await verify(app, { response: first });
  t.equal(replay.statusCode, 400);
  t.equal(replay.json().reason, 'challenge_unknown', 'a challenge is one-use');

  const stranger = new SoftAuthenticator(TEST_ISSUER);
  stranger.create({ rp: { id: 'localhost' }, user: { id: 'dXNyX3N0cmFuZ2Vy' }, challenge: 'AAAA' });
  const unknown = await verify(app, { response: stranger.get(await fresh()) });
  t.equal(unknown.json().reason, 'unknown_credential');

  const bobFor = await verify(app, { user: 'ada', response: bob.authenticator.get(await fresh()) });
  t.equal(bobFor.json().reason, 'unknown_credential', "another account's passkey with user=ada");
  const bobOnAdaOptions = await verify(app, {
    response: bob.authenticator.get(await fresh('ada'), { credId: bob.authenticator.credentials[0]!.id }),
  });
  t.equal(bobOnAdaOptions.json().reason, 'unknown_credential', "options for ada answered by bob's passkey");
  const handle = bob.authenticator.get(await fresh()) as any;
  handle.response.userHandle = Buffer.from('usr_someoneelse').toString('base64url');
  t.equal(
    (await verify(app, { response: handle })).json().reason,
    'unknown_credential',
    'a user handle of another account',
  );

  const cases: Array<[string, (o: any) => unknown, string, number]> = [
    [
      'a wrong origin',
      (o) => ada.authenticator.get(o, { origin: 'http://localhost:9999' }),
      'webauthn_origin_mismatch',
      400,
    ],
    ['a wrong RP ID', (o) => ada.authenticator.get(o, { rpId: 'example.com' }), 'webauthn_rp_mismatch', 400],
    [
      'no user verification',
      (o) => ada.authenticator.get(o, { noUserVerification: true }),
      'user_verification_required',
      400,
    ],
    ['a bad signature', (o) => ada.authenticator.get(o, { badSignature: true }), 'webauthn_verification_failed', 400],
    [
      'a counter that went backwards',
      (o) => ada.authenticator.get(o, { counter: 1 }),
      'credential_counter_regressed',
      401,
    ],
    ['a registration type', (o) => ada.authenticator.get(o, { type: 'webauthn.create' }), 'webauthn_malformed', 400],
    ['garbage', () => 42, 'webauthn_malformed', 400],
    [
      'bad base64url',
      (o) => {
        const r = ada.authenticator.get(o) as any;
        r.response.authenticatorData = '%%%';
        return r;
      },
      'webauthn_malformed',
      400,
    ],
    [
      'truncated authenticator data',
      (o) => {
        const r = ada.authenticator.get(o) as any;
        r.response.authenticatorData = 'AAAA';
        return r;
      },
      'webauthn_malformed',
      400,
    ],
    [
      'an unknown challenge',
      (o) => ada.authenticator.get(o, { challenge: 'bm90LWEtY2hhbGxlbmdl' }),
      'challenge_unknown',
      400,
    ],
  ];
  for (const [name, make, reason, status] of cases) {
    const res = await verify(app, { response: make(await fresh()) });
    t.equal(res.json().reason, reason, name);
    t.equal(res.statusCode, status, `${name}: status`);
  }
  const missing = await verify(app, {});
  t.equal(missing.json().reason, 'invalid_request');
});

t.test('a step-up challenge cannot be used to sign in', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const stepUp = await app.inject({ method: 'POST', url: '/auth/step-up/options', headers: ada.headers });
  const res = await verify(app, { response: ada.authenticator.get(stepUp.json().options) });
  t.equal(res.json().reason, 'challenge_mismatch');
});

t.test('rate-limits sign-in per account and per IP', async (t) => {
  const { app } = await build(t, {
    areas,
    config: { 'limits.authPerAccountPerMinute': 2, 'limits.authPerIpPerMinute': 1000 },
  });
  const ada = await signUp(app, 'ada');
  await signIn(app, ada);
  await signIn(app, ada);
  const res = await verify(app, { response: ada.authenticator.get((await options(app)).json().options) });
  t.equal(res.statusCode, 429);
  t.equal(res.json().reason, 'rate_limited');
  t.ok(Number(res.headers['retry-after']) >= 1);

  const { app: app2 } = await build(t, { areas, config: { 'limits.authPerIpPerMinute': 2 } });
  await options(app2);
  await options(app2);
  const third = await options(app2);
  t.equal(third.statusCode, 429);
  t.equal(third.json().reason, 'rate_limited');
});

t.test('`user` is "any, optional": null means usernameless, a non-string is not a username', async (t) => {
  const { app } = await build(t, { areas });
  const ada = await signUp(app, 'ada');
  const ok = await verify(app, { user: null, response: ada.authenticator.get((await options(app)).json().options) });
  t.equal(ok.statusCode, 200);
  const bad = await verify(app, { user: 42, response: ada.authenticator.get((await options(app)).json().options) });
  t.equal(bad.json().reason, 'invalid_username');
});
