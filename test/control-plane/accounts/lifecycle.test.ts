import t from 'tap';
import { MemorySharedState } from '#lib/runtime/shared-state/memory.js';
import type { RunningServices } from '../../../control-plane/src/services.js';
import { absorbCookies, headersFor, signIn as passkeySignIn, signUp } from '../../helpers/accounts.js';
import {
  ADMIN,
  basicAuth,
  exchangeCode,
  goodRequest,
  obtainCode,
  pkcePair,
  refresh,
  registerClient,
} from '../../helpers/oidc.js';
import { Browser } from '../../helpers/signed-in.js';
import { linkIn } from '../../helpers/smtp.js';
import { buildWatched } from '../../helpers/watched.js';

const admin = { authorization: `Bearer ${ADMIN}` };

function setup(t: { teardown(fn: () => unknown): void }) {
  return buildWatched(t, (clock) => ({ state: new MemorySharedState(clock.now), config: { adminToken: ADMIN } }));
}

async function verifiedEmail(services: RunningServices, identityId: string, email: string): Promise<string> {
  const row = await services.storage.emails.add({
    emailId: `eml_${identityId}`,
    identityId,
    email,
    createdAt: services.now(),
    verifiedAt: null,
  });
  await services.storage.emails.markVerified(row.emailId, services.now());
  return row.emailId;
}

t.test('operators read, disable, enable and delete accounts with the admin token', async (t) => {
  const { app, signIn, events } = await setup(t);
  const { identityId } = await signIn({ username: 'ada' });

  const read = await app.inject({ method: 'GET', url: `/admin/accounts/${identityId}`, headers: admin });
  t.equal(read.statusCode, 200);
  t.same(read.json(), { ok: true, identityId, username: 'ada', state: 'active', managedBy: null });
  t.same(
    (await app.inject({ method: 'GET', url: '/admin/accounts/ADA', headers: admin })).json().identityId,
    identityId,
    'a username works too',
  );

  const disabled = await app.inject({ method: 'POST', url: `/admin/accounts/${identityId}/disable`, headers: admin });
  t.equal(disabled.statusCode, 200);
  t.match(disabled.json(), { ok: true, identityId, username: 'ada', state: 'disabled', receipt: /^[0-9a-f]{64}$/ });
  t.match(
    events.find((e) => e.type === 'account.disabled'),
    { identityId, by: 'admin', sessions: 1, grants: 0 },
  );
  const again = await app.inject({ method: 'POST', url: `/admin/accounts/${identityId}/disable`, headers: admin });
  t.same(
    again.json(),
    { ok: true, identityId, username: 'ada', state: 'disabled', managedBy: null },
    'disabling twice changes and records nothing',
  );
  t.equal(events.filter((e) => e.type === 'account.disabled').length, 1);

  const enabled = await app.inject({ method: 'POST', url: `/admin/accounts/${identityId}/enable`, headers: admin });
  t.match(enabled.json(), { ok: true, state: 'active', receipt: /^[0-9a-f]{64}$/ });
  t.match(
    events.find((e) => e.type === 'account.enabled'),
    { identityId, by: 'admin' },
  );
  t.notOk(
    'receipt' in
      (await app.inject({ method: 'POST', url: `/admin/accounts/${identityId}/enable`, headers: admin })).json(),
  );

  const deleted = await app.inject({ method: 'DELETE', url: `/admin/accounts/${identityId}`, headers: admin });
  t.match(deleted.json(), { ok: true, identityId, deleted: true, receipt: /^[0-9a-f]{64}$/ });
  t.match(
    events.find((e) => e.type === 'account.deleted'),
    { identityId, by: 'admin', clients: 0 },
  );
  const gone = await app.inject({ method: 'GET', url: `/admin/accounts/${identityId}`, headers: admin });
  t.equal(gone.statusCode, 404);
  t.equal(gone.json().reason, 'not_found');
});

t.test('an account an org manages names that org in the admin view', async (t) => {
  const { app, services } = await setup(t);
  const now = services.now();
  await services.storage.orgs.create(
    { orgId: 'org_acme', slug: 'acme', name: 'Acme', website: null, createdAt: now },
    'usr_owner',
  );
  await services.storage.identities.create({
    identityId: 'usr_managed',
    username: 'managed',
    displayName: '',
    preferences: {},
    founder: false,
    managedBy: 'org_acme',
    createdAt: now,
    updatedAt: now,
  });
  const read = await app.inject({ method: 'GET', url: '/admin/accounts/managed', headers: admin });
  t.same(read.json(), {
    ok: true,
    identityId: 'usr_managed',
    username: 'managed',
    state: 'active',
    managedBy: { orgId: 'org_acme', slug: 'acme' },
  });
});

t.test('the admin account API refuses without the right token and answers 404 for unknown accounts', async (t) => {
  const { app, signIn } = await setup(t);
  const { identityId } = await signIn({ username: 'ada' });
  for (const headers of [
    {},
    { authorization: 'Bearer wrong-token-wrong-token-wrong-token' },
    { authorization: `Basic ${Buffer.from(`x:${ADMIN}`).toString('base64')}` },
  ]) {
    const res = await app.inject({ method: 'POST', url: `/admin/accounts/${identityId}/disable`, headers });
    t.equal(res.statusCode, 401);
    t.equal(res.json().reason, 'unauthorized');
  }
  for (const [method, url] of [
    ['GET', '/admin/accounts/usr_nobody'],
    ['POST', '/admin/accounts/usr_nobody/disable'],
    ['POST', '/admin/accounts/nobody/enable'],
    ['DELETE', '/admin/accounts/usr_nobody'],
  ] as const) {
    const res = await app.inject({ method, url, headers: admin });
    t.equal(res.statusCode, 404, `${method} ${url}`);
    t.equal(res.json().reason, 'not_found');
  }
  t.equal(
    (await app.inject({ method: 'GET', url: `/admin/accounts/${'x'.repeat(101)}`, headers: admin })).statusCode,
    400,
  );
});

t.test('without a configured admin token the admin API is off', async (t) => {
  const { app, signIn } = await buildWatched(t);
  const { identityId } = await signIn({ username: 'ada' });
  const res = await app.inject({ method: 'GET', url: `/admin/accounts/${identityId}`, headers: admin });
  t.equal(res.statusCode, 401);
  t.equal(res.json().reason, 'unauthorized');
});

t.test(
  "a disabled account's sessions end at once and it cannot sign in with a passkey, a backup code or a magic link",
  async (t) => {
    const { app, services, signIn, mails } = await setup(t);
    const account = await signUp(app, 'grace');
    const { browser: other } = await signIn({ username: 'grace' });
    const codes = (await other.post('/auth/recovery/regenerate')).json().codes as string[];
    await verifiedEmail(services, account.identityId, 'grace@example.com');
    const linkBrowser = new Browser(app);
    await linkBrowser.post('/auth/magic/request', { email: 'grace@example.com' });
    const link = linkIn((await mails())[0]!, '/auth/magic')!;

    await app.inject({ method: 'POST', url: `/admin/accounts/${account.identityId}/disable`, headers: admin });
    const page = await app.inject({ method: 'GET', url: '/account?format=json', headers: account.headers });
    t.equal(page.statusCode, 401, 'the passkey session ended');
    t.equal((await other.get('/account?format=json')).statusCode, 401, 'and every other session');
    t.same(await services.storage.sessions.listLive(account.identityId, services.now()), []);

    const begin = await app.inject({ method: 'GET', url: '/auth/assertion-options' });
    const response = account.authenticator.get(begin.json().options);
    const passkey = await app.inject({
      method: 'POST',
      url: '/auth/assertion-verify',
      headers: headersFor({}),
      payload: { response },
    });
    t.equal(passkey.statusCode, 403);
    t.equal(passkey.json().reason, 'account_disabled');
    t.notOk(absorbCookies(passkey)['kp_session'], 'no session cookie');

    const recovery = await new Browser(app).post('/auth/recovery/verify', { user: 'grace', code: codes[0] });
    t.equal(recovery.statusCode, 403);
    t.equal(recovery.json().reason, 'account_disabled');

    const url = new URL(link);
    const magic = await linkBrowser.get(url.pathname + url.search, { accept: 'application/json' });
    t.equal(magic.statusCode, 403);
    t.equal(magic.json().reason, 'account_disabled');
    t.same(
      await services.storage.sessions.listLive(account.identityId, services.now()),
      [],
      'no sign-in made a session',
    );

    await app.inject({ method: 'POST', url: `/admin/accounts/${account.identityId}/enable`, headers: admin });
    t.ok(await passkeySignIn(app, account), 'enabled again, the passkey signs in');
    const unused = await new Browser(app).post('/auth/recovery/verify', { user: 'grace', code: codes[0] });
    t.equal(unused.statusCode, 200, 'the refused attempt did not use up the backup code');
  },
);

t.test(
  'every grant of a disabled account is refused: code exchange, refresh, introspection and userinfo',
  async (t) => {
    const { app, signIn } = await setup(t);
    const client = await registerClient(app);
    const { browser, identityId } = await signIn({ username: 'ada' });
    const { verifier, challenge } = pkcePair();
    const tokens = (
      await exchangeCode(app, client, (await obtainCode(browser, goodRequest(client, challenge))).code, verifier)
    ).json();
    const { verifier: v2, challenge: c2 } = pkcePair();
    const pending = (await obtainCode(browser, goodRequest(client, c2))).code;
    const introspect = (token: string) =>
      app.inject({
        method: 'POST',
        url: '/auth/introspect',
        headers: { authorization: basicAuth(client) },
        payload: { token },
      });
    t.equal((await introspect(tokens.access_token)).json().active, true);

    await app.inject({ method: 'POST', url: `/admin/accounts/${identityId}/disable`, headers: admin });

    const code = await exchangeCode(app, client, pending, v2);
    t.equal(code.statusCode, 400);
    t.match(code.json(), { reason: 'invalid_grant', error: 'invalid_grant' });
    // What the gateway does to keep its session alive: refresh the family it holds.
    const refreshed = await refresh(app, client, tokens.refresh_token);
    t.equal(refreshed.statusCode, 400);
    t.match(refreshed.json(), { reason: 'invalid_grant', error: 'invalid_grant' });
    t.same((await introspect(tokens.access_token)).json(), { active: false });
    t.same((await introspect(tokens.refresh_token)).json(), { active: false });
    const userinfo = await app.inject({
      method: 'GET',
      url: '/auth/userinfo',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    t.equal(userinfo.statusCode, 401);
    t.equal(userinfo.json().reason, 'invalid_token');
  },
);

t.test('the account state is checked on every grant, even one a disable did not revoke', async (t) => {
  const { app, services, signIn } = await setup(t);
  const client = await registerClient(app);
  const { browser, identityId } = await signIn({ username: 'ada' });
  const { verifier, challenge } = pkcePair();
  const tokens = (
    await exchangeCode(app, client, (await obtainCode(browser, goodRequest(client, challenge))).code, verifier)
  ).json();
  // Only the state flips: grants and sessions stay as they were.
  await services.storage.identities.setState(identityId, 'disabled', services.now());
  t.equal((await refresh(app, client, tokens.refresh_token)).json().reason, 'invalid_grant');
  const introspect = (token: string) =>
    app.inject({
      method: 'POST',
      url: '/auth/introspect',
      headers: { authorization: basicAuth(client) },
      payload: { token },
    });
  t.equal((await introspect(tokens.access_token)).json().active, false);
  t.equal((await introspect(tokens.refresh_token)).json().active, false);
  await services.storage.identities.setState(identityId, 'active', services.now());
  t.equal((await refresh(app, client, tokens.refresh_token)).statusCode, 200, 'active again, the family works');
});

t.test('a user deletes their own account at sensitive assurance with their username as confirmation', async (t) => {
  const { app, services, signIn, events } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'ada', assurance: 'sensitive' });
  await browser.post('/auth/recovery/regenerate');
  await verifiedEmail(services, identityId, 'ada@example.com');
  const owned = await browser.post('/register', {
    redirect_uris: ['https://mine.example.com/cb'],
    token_endpoint_auth_method: 'client_secret_basic',
    client_name: 'Mine',
  });
  t.equal(owned.statusCode, 201);
  const rp = await registerClient(app);
  const { verifier, challenge } = pkcePair();
  const tokens = (
    await exchangeCode(app, rp, (await obtainCode(browser, goodRequest(rp, challenge))).code, verifier)
  ).json();
  const { browser: laptop } = await signIn({ username: 'ada' });

  const wrong = await browser.post('/account/delete', { confirm: 'grace' });
  t.equal(wrong.statusCode, 400);
  t.equal(wrong.json().reason, 'confirmation_mismatch');
  t.equal((await browser.post('/account/delete', {})).json().reason, 'invalid_request');

  const res = await browser.post('/account/delete', { confirm: 'Ada' });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { ok: true, receipt: /^[0-9a-f]{64}$/ });
  t.match(String(res.headers['set-cookie']), /kp_session=;/, 'the session cookie is cleared');
  t.match(
    events.find((e) => e.type === 'account.deleted'),
    { identityId, by: 'self', clients: 1 },
  );
  t.match(
    events.find((e) => e.type === 'client.deleted'),
    { clientId: owned.json().client_id },
  );

  const { storage } = services;
  t.equal(await storage.identities.get(identityId), null);
  t.equal(await storage.identities.findByUsername('ada'), null, 'the username is free again');
  t.same(await storage.credentials.listByIdentity(identityId), []);
  t.same(await storage.recoveryCodes.listUnused(identityId), []);
  t.same(await storage.emails.listByIdentity(identityId), []);
  t.equal(await storage.totp.get(identityId), null);
  t.same(await storage.sessions.listLive(identityId, services.now()), []);
  t.same(await storage.devices.list(identityId), []);
  t.equal(await storage.clients.get(owned.json().client_id), null, 'personal clients go');
  t.ok(await storage.clients.get(rp.client_id), 'other clients stay');
  t.equal(await storage.oidc.approval(identityId, rp.client_id), null);
  t.equal((await laptop.get('/account?format=json')).statusCode, 401, 'other sessions end');
  t.equal((await refresh(app, rp, tokens.refresh_token)).json().reason, 'invalid_grant', 'refresh families go');
  const receipt = await app.inject({ method: 'GET', url: `/receipts/${res.json().receipt}` });
  t.equal(receipt.statusCode, 200, 'the receipt stays');
  t.same(Object.keys(receipt.json().receipt).sort(), [
    'actor',
    'at',
    'by',
    'clients',
    'identityId',
    'kind',
    'nonce',
    'outcome',
  ]);
});

t.test("deleting one's own account needs a sensitive session", async (t) => {
  const { app, signIn } = await setup(t);
  const { browser } = await signIn({ username: 'ada' });
  const res = await browser.post('/account/delete', { confirm: 'ada' });
  t.equal(res.statusCode, 403);
  t.equal(res.json().reason, 'insufficient_assurance');
  const anonymous = await app.inject({ method: 'POST', url: '/account/delete', payload: { confirm: 'ada' } });
  t.equal(anonymous.statusCode, 401);
  t.equal(anonymous.json().reason, 'unauthorized');
});

t.test('the account page offers the deletion with a labelled confirmation field', async (t) => {
  const { signIn } = await setup(t);
  const { browser } = await signIn({ username: 'ada' });
  const page = await browser.get('/account', { accept: 'text/html' });
  t.match(page.body, /<h2 id="delete-h">Delete my account<\/h2>/);
  t.match(page.body, /<form data-form="delete-account" aria-labelledby="delete-h"/);
  t.match(
    page.body,
    /<label for="delete-confirm">[^<]*<strong>ada<\/strong><\/label>\s*<input id="delete-confirm" name="confirm" required/,
  );
  t.match(
    page.body,
    /href="\/auth\/step-up\?return=\/account">confirm it is you/,
    'a passkey session is asked to step up first',
  );
  t.notMatch(page.body, /<script>/, 'no inline script (strict CSP)');
  const script = await browser.get('/assets/account.js');
  t.match(script.body, /'\/account\/delete'/);
});

t.test("a deleted account's pending authorization code cannot be exchanged", async (t) => {
  const { app, signIn } = await setup(t);
  const client = await registerClient(app);
  const { browser, identityId } = await signIn({ username: 'ada' });
  const { verifier, challenge } = pkcePair();
  const { code } = await obtainCode(browser, goodRequest(client, challenge));
  await app.inject({ method: 'DELETE', url: `/admin/accounts/${identityId}`, headers: admin });
  const res = await exchangeCode(app, client, code, verifier);
  t.equal(res.json().reason, 'invalid_grant');
});
