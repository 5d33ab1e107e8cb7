import t from 'tap';
import { Database } from '../../../control-plane/src/storage/sqlite/driver.js';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { build as buildWhole, tempDir, TEST_ISSUER, type BuildOptions } from '../../helpers/build.js';
import { absorbCookies, headersFor, signUp } from '../../helpers/accounts.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import type { DomainEvent } from '../../../control-plane/src/events/types.js';

// Sign-up is the passkeys area; the account page (JSON) shows what it made.
const build = (t: Parameters<typeof buildWhole>[0], options: BuildOptions = {}) =>
  buildWhole(t, { areas: ['passkeys', 'account'], ...options });

async function begin(
  app: Awaited<ReturnType<typeof build>>['app'],
  username: string,
  extra: Record<string, unknown> = {},
) {
  const res = await app.inject({ method: 'POST', url: '/auth/registration-options', payload: { username, ...extra } });
  return res;
}

t.test('signs up with a passkey: account, first passkey, session and device cookies', async (t) => {
  const dataDir = tempDir(t);
  const { app, services } = await build(t, { dataDir });
  const events: DomainEvent[] = [];
  services.events.subscribe((_tx, event) => {
    events.push(event);
  });
  const started = await begin(app, 'Ada', { displayName: 'Ada Lovelace' });
  t.equal(started.statusCode, 200);
  const { options, signupToken } = started.json();
  t.equal(options.rp.id, 'localhost', 'RP ID is the issuer host name');
  t.same(
    options.pubKeyCredParams.map((p: { alg: number }) => p.alg),
    [-8, -7, -257],
    'algorithms are pinned',
  );
  t.equal(options.authenticatorSelection.residentKey, 'required', 'discoverable credentials');
  t.equal(options.authenticatorSelection.userVerification, 'required');
  t.equal(options.user.name, 'ada', 'the username is case-folded');
  t.equal(options.user.displayName, 'Ada Lovelace');
  t.type(signupToken, 'string');

  const authenticator = new SoftAuthenticator(TEST_ISSUER);
  const response = authenticator.create(options);
  const done = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    payload: { user: 'ada', response, signupToken },
  });
  t.equal(done.statusCode, 200, done.body);
  const body = done.json();
  t.match(body, { ok: true, home: '/account' });
  t.match(body.identityId, /^usr_/);
  const cookies = done.cookies as Array<{
    name: string;
    value: string;
    httpOnly?: boolean;
    sameSite?: string;
    path?: string;
    secure?: boolean;
  }>;
  const session = cookies.find((c) => c.name === 'kp_session');
  const device = cookies.find((c) => c.name === 'kp_device');
  t.ok(session && device, 'session and device cookies are set');
  t.match(session, { httpOnly: true, sameSite: 'Lax', path: '/' });
  t.notOk(session!.secure, 'not Secure on an http://localhost issuer');
  t.match(device, { httpOnly: true, sameSite: 'Lax', path: '/' });

  const account = await app.inject({
    method: 'GET',
    url: '/account?format=json',
    headers: { cookie: `kp_session=${session!.value}` },
  });
  t.match(account.json(), {
    ok: true,
    identityId: body.identityId,
    username: 'ada',
    displayName: 'Ada Lovelace',
    passkeys: [{ credId: response.id, label: 'Passkey 1' }],
  });
  t.notMatch(account.body, /publicKey/, 'public keys are never listed');

  t.same(
    events.map((e) => e.type),
    ['account.created', 'session.started'],
  );
  t.match(events[0], { identityId: body.identityId, founder: false, credId: response.id });
  t.match(events[1], { identityId: body.identityId, method: 'passkey', assurance: 'passkey' });

  await app.close();
  const db = new Database(join(dataDir, 'keyplane.db'), { readonly: true });
  t.teardown(() => db.close());
  const rows = db.prepare('SELECT * FROM sessions').all() as Array<Record<string, unknown>>;
  t.equal(rows.length, 1);
  t.equal(
    rows[0]!['token_hash'],
    createHash('sha256').update(session!.value).digest('hex'),
    'only the SHA-256 of the cookie is stored',
  );
  t.notMatch(JSON.stringify(rows), new RegExp(session!.value), 'the cookie value is nowhere in the table');
  t.same(JSON.parse(String(rows[0]!['amr'])), ['pop', 'user']);
});

t.test('responses carry the receipt a subscribed ledger returns', async (t) => {
  const { app, services } = await build(t);
  services.events.subscribe(() => 'ab'.repeat(32));
  const started = (await begin(app, 'receipted')).json();
  const response = new SoftAuthenticator(TEST_ISSUER).create(started.options);
  const done = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    payload: { user: 'receipted', response, signupToken: started.signupToken },
  });
  t.match(done.json().receipt, /^[0-9a-f]{64}$/);
});

t.test('refuses usernames outside the pattern, taken names and oversized display names', async (t) => {
  const { app } = await build(t);
  for (const username of ['ab', '-lead', 'a'.repeat(33), 'has space', 'émile', 'x/y']) {
    const res = await begin(app, username);
    t.equal(res.statusCode, 400, username);
    t.equal(res.json().reason, 'invalid_username', username);
  }
  const missing = await app.inject({ method: 'POST', url: '/auth/registration-options', payload: {} });
  t.equal(missing.json().reason, 'invalid_request');
  const long = await begin(app, 'longname', { displayName: 'x'.repeat(65) });
  t.equal(long.json().reason, 'display_name_invalid');
  const control = await begin(app, 'ctrlname', { displayName: 'a\u0007b' });
  t.equal(control.json().reason, 'display_name_invalid');

  await signUp(app, 'ada');
  const taken = await begin(app, 'ADA');
  t.equal(taken.statusCode, 409);
  t.equal(taken.json().reason, 'username_taken', 'uniqueness is case-insensitive');
});

t.test('refuses a name taken between options and verify', async (t) => {
  const { app } = await build(t);
  const first = (await begin(app, 'bob')).json();
  const second = (await begin(app, 'bob')).json();
  const a = new SoftAuthenticator(TEST_ISSUER);
  const b = new SoftAuthenticator(TEST_ISSUER);
  const ok = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    payload: { user: 'bob', response: a.create(first.options), signupToken: first.signupToken },
  });
  t.equal(ok.statusCode, 200);
  const late = await app.inject({
    method: 'POST',
    url: '/auth/registration-verify',
    payload: { user: 'bob', response: b.create(second.options), signupToken: second.signupToken },
  });
  t.equal(late.statusCode, 409);
  t.equal(late.json().reason, 'username_taken');
});

t.test('refuses replayed, mismatched and forged registration responses, each with its reason', async (t) => {
  const { app, services } = await build(t);
  const verify = (payload: Record<string, unknown>) =>
    app.inject({ method: 'POST', url: '/auth/registration-verify', payload });
  const fresh = async (username: string) =>
    (await begin(app, username)).json() as { options: any; signupToken: string };
  const a = new SoftAuthenticator(TEST_ISSUER);

  const reused = await fresh('carol');
  const response = a.create(reused.options);
  t.equal((await verify({ user: 'carol', response, signupToken: reused.signupToken })).statusCode, 200);
  const replay = await verify({ user: 'carol', response, signupToken: reused.signupToken });
  t.equal(replay.statusCode, 400);
  t.equal(replay.json().reason, 'challenge_unknown', 'a sign-up token is one-use');
  const unknown = await verify({ user: 'carol', response, signupToken: 'x'.repeat(43) });
  t.equal(unknown.json().reason, 'challenge_unknown');

  const cases: Array<[string, string, (options: any) => unknown, string?]> = [
    ['another user than the options', 'dave', (o) => a.create(o), 'someone'],
    ['an old challenge', 'erin', (o) => a.create(o, { challenge: reused.options.challenge })],
    ['a wrong origin', 'frank', (o) => a.create(o, { origin: 'https://evil.example' })],
    ['a cross-origin iframe', 'frank2', (o) => a.create(o, { crossOrigin: true })],
    ['a wrong RP ID', 'gina', (o) => a.create(o, { rpId: 'evil.example' })],
    ['no user verification', 'hank', (o) => a.create(o, { noUserVerification: true })],
    ['an assertion type', 'ivan', (o) => a.create(o, { type: 'webauthn.get' })],
    ['garbage', 'judy', () => 'not a credential'],
    ['missing fields', 'kate', () => ({ id: 'abc', rawId: 'abc', type: 'public-key' })],
    [
      'non-base64url client data',
      'liam',
      (o) => ({ ...(a.create(o) as object), response: { clientDataJSON: '***', attestationObject: 'AA' } }),
    ],
    [
      'a broken attestation object',
      'mona',
      (o) => {
        const r = a.create(o) as any;
        r.response.attestationObject = 'AAAA';
        return r;
      },
    ],
    ['mismatched id and rawId', 'nina', (o) => ({ ...(a.create(o) as object), rawId: 'other' })],
  ];
  const expected: Record<string, string> = {
    'another user than the options': 'challenge_mismatch',
    'an old challenge': 'challenge_mismatch',
    'a wrong origin': 'webauthn_origin_mismatch',
    'a cross-origin iframe': 'webauthn_origin_mismatch',
    'a wrong RP ID': 'webauthn_rp_mismatch',
    'no user verification': 'user_verification_required',
    'an assertion type': 'webauthn_malformed',
    garbage: 'webauthn_malformed',
    'missing fields': 'webauthn_malformed',
    'non-base64url client data': 'webauthn_malformed',
    'a broken attestation object': 'webauthn_malformed',
    'mismatched id and rawId': 'webauthn_malformed',
  };
  for (const [name, username, make, user] of cases) {
    const started = await fresh(username);
    const res = await verify({
      user: user ?? username,
      response: make(started.options),
      signupToken: started.signupToken,
    });
    t.equal(res.statusCode, 400, `${name}: 400`);
    t.equal(res.json().reason, expected[name], name);
    t.equal(res.json().ok, false);
  }
  t.equal(await services.storage.identities.findByUsername('frank'), null, 'no refused sign-up created an account');
});

t.test('refuses ordinary sign-up when self-service is off', async (t) => {
  const { app } = await build(t, { config: { 'signup.selfService': false } });
  const res = await begin(app, 'outsider');
  t.equal(res.statusCode, 403);
  t.equal(res.json().reason, 'signup_closed');
});

t.test('rate-limits sign-up per IP and per account with Retry-After', async (t) => {
  const { app } = await build(t, { config: { 'limits.authPerIpPerMinute': 3, 'limits.authPerAccountPerMinute': 2 } });
  t.equal((await begin(app, 'same')).statusCode, 200);
  t.equal((await begin(app, 'same')).statusCode, 200);
  const perAccount = await begin(app, 'same');
  t.equal(perAccount.statusCode, 429);
  t.equal(perAccount.json().reason, 'rate_limited');
  t.match(perAccount.headers['retry-after'], /^\d+$/);
  const perIp = await begin(app, 'other');
  t.equal(perIp.statusCode, 429, 'the fourth request from this IP');
  t.equal(perIp.json().reason, 'rate_limited');
});

t.test('a second sign-up in the same browser replaces its session and keeps its device', async (t) => {
  const { app } = await build(t);
  const first = await signUp(app, 'first');
  const second = await signUp(app, 'second', { cookies: first.cookies });
  t.equal(second.cookies['kp_device'], first.cookies['kp_device'], 'same device cookie');
  const old = await app.inject({
    method: 'GET',
    url: '/account?format=json',
    headers: { cookie: `kp_session=${first.cookies['kp_session']}` },
  });
  t.equal(old.statusCode, 401, 'the earlier session was revoked');
  absorbCookies(old, first.cookies);
  t.notOk(first.cookies['kp_session'], 'and its stale cookie is cleared');
  const now = await app.inject({ method: 'GET', url: '/account?format=json', headers: headersFor(second.cookies) });
  t.equal(now.json().username, 'second');
});
