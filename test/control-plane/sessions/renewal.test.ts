import t, { type Test } from 'tap';
import type { FastifyInstance } from 'fastify';
import { renewSessionToken } from '../../../control-plane/src/sessions/renew-session.js';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import { generateTotpCode } from '#lib/totp/totp.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { ADMIN, exchangeCode, goodRequest, obtainCode, pkcePair, refresh, registerClient } from '../../helpers/oidc.js';
import { Browser, ORIGIN } from '../../helpers/signed-in.js';
import { linkIn } from '../../helpers/smtp.js';
import { SoftAuthenticator } from '../../helpers/soft-authenticator.js';
import { buildWatched } from '../../helpers/watched.js';
import { TEST_ISSUER } from '../../helpers/build.js';

// ASVS 5.0 V7.2.4 (docs/security.md#session-tokens): every authentication gives the browser a
// new session token and ends the one it had, while the session (its id, grants, history) goes on.

function setup(t: Test, config: Record<string, unknown> = {}) {
  return buildWatched(t, (clock) => ({
    state: new MemorySharedState(clock.now),
    config: { adminToken: ADMIN, ...config },
  }));
}

const tokenOf = (browser: Browser) => browser.cookies.get('kp_session')!;

async function ok<R extends { statusCode: number; body: string }>(res: R, what: string): Promise<R> {
  if (res.statusCode !== 200) throw new Error(`${what}: ${res.statusCode} ${res.body}`);
  return res;
}

/** A gateway's client: its grants always end with the session that started them (docs/security.md "Sign-out"). */
const GATEWAY = { gateway: { mode: 'enforce', routes: [{ path: '/', min_assurance: 'passkey' }] } };

async function signUp(browser: Browser, authenticator: SoftAuthenticator, username: string): Promise<string> {
  const begin = (await ok(await browser.post('/auth/registration-options', { username }), 'options')).json();
  const done = await browser.post('/auth/registration-verify', {
    user: username,
    response: authenticator.create(begin.options),
    signupToken: begin.signupToken,
  });
  return (await ok(done, 'registration')).json().identityId;
}

async function passkeySignIn(browser: Browser, authenticator: SoftAuthenticator) {
  const options = (await ok(await browser.get('/auth/assertion-options'), 'assertion-options')).json().options;
  return ok(await browser.post('/auth/assertion-verify', { response: authenticator.get(options) }), 'sign-in');
}

async function stepUp(browser: Browser, authenticator: SoftAuthenticator, totpCode?: string) {
  const options = (await ok(await browser.post('/auth/step-up/options'), 'step-up options')).json().options;
  const payload = { response: authenticator.get(options), ...(totpCode ? { totpCode } : {}) };
  return ok(await browser.post('/auth/step-up/verify', payload), 'step-up');
}

/**
 * The token captured before the event, presented alone as an attacker holding it would
 * (same-origin, nothing else): it reads nothing and can do nothing, sensitive or not.
 */
async function refused(t: Test, app: FastifyInstance, token: string, username: string, event: string) {
  const headers = { cookie: `kp_session=${token}`, origin: ORIGIN };
  const read = await app.inject({ method: 'GET', url: '/account?format=json', headers });
  t.equal(read.statusCode, 401, `${event}: the old token reads nothing`);
  t.equal(read.json().reason, 'unauthorized');
  const regenerate = await app.inject({ method: 'POST', url: '/auth/recovery/regenerate', headers });
  t.equal(regenerate.statusCode, 401, `${event}: the old token cannot regenerate the backup codes`);
  const remove = await app.inject({
    method: 'POST',
    url: '/account/delete',
    headers,
    payload: { confirm: username },
  });
  t.equal(remove.statusCode, 401, `${event}: nor take a sensitive action`);
  t.equal(remove.json().reason, 'unauthorized');
}

/** The browser's session after the event: one, the same id, at `assurance`. */
async function oneSession(t: Test, browser: Browser, sessionId: string, assurance: string, event: string) {
  const view = (await ok(await browser.get('/account?format=json'), 'account')).json();
  t.same(
    view.sessions.map((s: { identifier: string; assurance: string; current: boolean }) => [
      s.identifier,
      s.assurance,
      s.current,
    ]),
    [[sessionId, assurance, true]],
    `${event}: one session, the same one, at ${assurance}`,
  );
}

t.test(
  'every authentication gives a new token and refuses the old one, while the session and its grant go on',
  async (t) => {
    const { app, services, events, mails, clock } = await setup(t);
    const client = await registerClient(app, GATEWAY);
    const browser = new Browser(app);
    const authenticator = new SoftAuthenticator(TEST_ISSUER);
    const identityId = await signUp(browser, authenticator, 'ada');
    const [session] = await services.storage.sessions.listLive(identityId, services.now());
    const sessionId = session!.sessionId;
    const signedUp = events.length;

    // A grant the session started, to follow through every renewal.
    const { verifier, challenge } = pkcePair();
    const { code } = await obtainCode(
      browser,
      goodRequest(client, challenge, { scope: 'openid email offline_access' }),
    );
    let refreshToken = (await exchangeCode(app, client, code, verifier)).json().refresh_token as string;

    // 1. A passkey sign-in in the same browser.
    let before = tokenOf(browser);
    await passkeySignIn(browser, authenticator);
    t.not(tokenOf(browser), before, 'passkey sign-in: a new token');
    await refused(t, app, before, 'ada', 'passkey sign-in');
    await oneSession(t, browser, sessionId, 'passkey', 'passkey sign-in');
    t.match(events.at(-1), { type: 'session.renewed', sessionId, method: 'passkey', assurance: 'passkey' });

    // 2. A backup code.
    const codes = (await ok(await browser.post('/auth/recovery/regenerate'), 'regenerate')).json().codes as string[];
    before = tokenOf(browser);
    await ok(await browser.post('/auth/recovery/verify', { user: 'ada', code: codes[0] }), 'recovery sign-in');
    t.not(tokenOf(browser), before, 'backup code: a new token');
    await refused(t, app, before, 'ada', 'backup code');
    await oneSession(t, browser, sessionId, 'recovery', 'backup code');

    // 3. A magic link raises the recovery session to email.
    const emailId = `eml_${identityId}`;
    await services.storage.emails.add({
      emailId,
      identityId,
      email: 'ada@example.com',
      createdAt: 1,
      verifiedAt: null,
    });
    await services.storage.emails.markVerified(emailId, services.now());
    await ok(await browser.post('/auth/magic/request', { email: 'ada@example.com' }), 'magic request');
    const link = new URL(linkIn((await mails())[0]!, '/auth/magic')!);
    before = tokenOf(browser);
    t.equal((await browser.get(link.pathname + link.search)).statusCode, 303);
    t.not(tokenOf(browser), before, 'magic link: a new token');
    await refused(t, app, before, 'ada', 'magic link');
    await oneSession(t, browser, sessionId, 'email', 'magic link');

    // 4. A step-up with a passkey.
    before = tokenOf(browser);
    await stepUp(browser, authenticator);
    t.not(tokenOf(browser), before, 'step-up: a new token');
    await refused(t, app, before, 'ada', 'step-up');
    await oneSession(t, browser, sessionId, 'sensitive', 'step-up');

    // 5. A step-up with a passkey and TOTP.
    const setupTotp = (await ok(await browser.post('/auth/totp/setup'), 'totp setup')).json();
    await ok(
      await browser.post('/auth/totp/confirm', { code: generateTotpCode(setupTotp.secret, clock.now()) }),
      'totp confirm',
    );
    clock.advance(60_000);
    before = tokenOf(browser);
    await stepUp(browser, authenticator, generateTotpCode(setupTotp.secret, clock.now()));
    t.not(tokenOf(browser), before, 'step-up with TOTP: a new token');
    await refused(t, app, before, 'ada', 'step-up with TOTP');
    await oneSession(t, browser, sessionId, 'sensitive', 'step-up with TOTP');
    t.match(events.at(-1), { type: 'step_up.completed', sessionId, totp: true });

    // The sensitive actions work with the new token, and the account is still there.
    t.equal((await browser.post('/auth/recovery/regenerate')).statusCode, 200, 'the new token acts');
    t.ok(await services.storage.identities.get(identityId), 'no old token deleted the account');

    // The grant went on through every renewal: same sid, not on any deny list, still refreshing.
    const refreshed = await refresh(app, client, refreshToken);
    t.equal(refreshed.statusCode, 200, refreshed.body);
    refreshToken = refreshed.json().refresh_token;
    t.ok(refreshToken);
    const idToken = JSON.parse(Buffer.from(refreshed.json().id_token.split('.')[1], 'base64url').toString());
    t.equal(idToken.sid, sessionId, 'the ID token names the same session');
    t.same(await services.storage.sessions.listRevokedForClient(client.client_id, 0, 10), [], 'no sid was revoked');
    t.notOk(
      events
        .slice(signedUp)
        .some((e) => e.type === 'session.ended' || e.type === 'session.revoked' || e.type === 'session.started'),
      'no renewal ended the session or started another',
    );
  },
);

t.test('a sign-in to another account ends the session the browser had, with its grants', async (t) => {
  const { app, services } = await setup(t);
  const client = await registerClient(app, GATEWAY);
  const browser = new Browser(app);
  const ada = await signUp(browser, new SoftAuthenticator(TEST_ISSUER), 'ada');
  const [adaSession] = await services.storage.sessions.listLive(ada, services.now());
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge, { scope: 'openid offline_access' }));
  const tokens = (await exchangeCode(app, client, code, verifier)).json();
  const before = tokenOf(browser);

  const bob = await signUp(browser, new SoftAuthenticator(TEST_ISSUER), 'bob');
  t.not(bob, ada);
  t.same(await services.storage.sessions.listLive(ada, services.now()), [], "ada's session ended");
  t.same(
    await services.storage.sessions.listRevokedForClient(client.client_id, 0, 10),
    [adaSession!.sessionId],
    'and its sid is on the deny list',
  );
  t.equal((await refresh(app, client, tokens.refresh_token)).json().error, 'invalid_grant', 'its grant ended');
  await refused(t, app, before, 'ada', "bob's sign-up");
});

t.test(
  "a request still in flight with the old token is refused without clearing the browser's new cookie",
  async (t) => {
    const { app } = await setup(t);
    const browser = new Browser(app);
    const authenticator = new SoftAuthenticator(TEST_ISSUER);
    await signUp(browser, authenticator, 'ada');
    const before = tokenOf(browser);
    await stepUp(browser, authenticator);
    const straggler = await app.inject({
      method: 'GET',
      url: '/account?format=json',
      headers: { cookie: `kp_session=${before}` },
    });
    t.equal(straggler.statusCode, 401);
    t.notOk(straggler.headers['set-cookie'], 'no Set-Cookie: the new cookie stays in the browser');
    const unknown = await app.inject({
      method: 'GET',
      url: '/account?format=json',
      headers: { cookie: `kp_session=${'A'.repeat(43)}` },
    });
    t.equal(unknown.statusCode, 401);
    t.match(String(unknown.headers['set-cookie']), /kp_session=;/, 'an unknown token is cleared as before');
  },
);

t.test('of two renewals of the same token one wins; a renewal restarts both lifetimes', async (t) => {
  const { app, services, clock, config } = await setup(t);
  const browser = new Browser(app);
  const identityId = await signUp(browser, new SoftAuthenticator(TEST_ISSUER), 'ada');
  const [session] = await services.storage.sessions.listLive(identityId, services.now());
  const presented = { id: session!.sessionId, identityId, tokenHash: sha256Hex(tokenOf(browser)) };
  const signIn = { kind: 'sign-in' as const, assurance: 'passkey' as const, amr: ['pop', 'user'] };
  clock.advance(config.lifetimes.sessionIdle * 1000 - 1000);
  const [first, second] = await Promise.all([
    services.storage.transaction((tx) => renewSessionToken(services, tx, presented, signIn)),
    services.storage.transaction((tx) => renewSessionToken(services, tx, presented, signIn)),
  ]);
  t.equal([first, second].filter((renewed) => renewed !== null).length, 1, 'exactly one renewal');
  const renewed = (first ?? second)!;
  const stored = await services.storage.sessions.findLive(sha256Hex(renewed.token), services.now());
  t.equal(stored?.idleExpiresAt, services.now() + config.lifetimes.sessionIdle * 1000, 'idle counts from now');
  t.equal(stored?.absoluteExpiresAt, services.now() + config.lifetimes.sessionAbsolute * 1000, 'absolute too');
  t.equal(stored?.createdAt, session!.createdAt, 'the session keeps its start');
});
