import t from 'tap';
import type { Test } from 'tap';
import type { FastifyInstance } from 'fastify';
import { buildSignedIn, Browser } from '../../helpers/signed-in.js';
import { ADMIN, basicAuth, registerClient } from '../../helpers/oidc.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { createOrg } from '../../../control-plane/src/orgs/membership.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['clients', 'oidc', 'passkeys'] as const;

const app1 = {
  client_name: 'Notes',
  redirect_uris: ['https://notes.example.com/callback'],
  grant_types: ['authorization_code', 'refresh_token'],
  scope: 'openid offline_access',
  token_endpoint_auth_method: 'client_secret_basic',
};

async function setup(t: Test) {
  const built = await buildSignedIn(t, { areas, config: { adminToken: ADMIN } });
  const owner = await built.signIn({ username: 'ada', assurance: 'sensitive' });
  const reg = await owner.browser.post('/apps/register', app1);
  t.equal(reg.statusCode, 201);
  return {
    ...built,
    owner,
    registered: reg.json() as { client_id: string; client_secret: string; revision: number; receipt?: string },
  };
}

function tokenAttempt(built: { app: FastifyInstance }, client: { client_id: string; client_secret: string }) {
  return built.app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-real-token' }).toString(),
  });
}

t.test('an owner registers an app, lists it, and only its hash is stored', async (t) => {
  const { owner, registered, services } = await setup(t);
  t.match(registered, { ok: true, client_id: /^cl_/, client_secret: /^[A-Za-z0-9_-]{43}$/, revision: 1 });
  const stored = await services.storage.clients.get(registered.client_id);
  t.equal(stored?.ownerId, owner.identityId);
  t.equal(stored?.secretHash, sha256Hex(registered.client_secret));
  const list = await owner.browser.get('/apps?format=json');
  t.equal(list.statusCode, 200);
  t.match(list.json(), {
    ok: true,
    clients: [{ client_id: registered.client_id, client_name: 'Notes', client_type: 'confidential', revision: 1 }],
  });
  t.notOk(list.body.includes(registered.client_secret));
});

t.test('the apps page is HTML with a nonce CSP, forms, and a same-origin referrer policy', async (t) => {
  const { owner, registered } = await setup(t);
  const res = await owner.browser.get('/apps', { accept: 'text/html' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /text\/html/);
  t.equal(res.headers['referrer-policy'], 'same-origin');
  t.match(String(res.headers['content-security-policy']), /nonce-/);
  t.match(res.body, /<meta name="referrer" content="same-origin">/);
  t.match(res.body, /action="\/apps\/register"/);
  t.match(res.body, new RegExp(`action="/apps/${registered.client_id}/rotate-secret"`));
  t.notOk(/ on[a-z]+=/.test(res.body), 'no inline handlers');
});

t.test("the page's registration form works without JavaScript", async (t) => {
  const { app, signIn } = await buildSignedIn(t, { areas });
  const { browser, identityId } = await signIn({ username: 'bo' });
  const res = await browser.post(
    '/apps/register',
    new URLSearchParams({
      client_name: 'Blog',
      redirect_uris: 'https://blog.example.com/cb\nhttps://staging.blog.example.com/cb',
      client_type: 'public',
    }).toString(),
    { 'content-type': 'application/x-www-form-urlencoded' },
  );
  t.equal(res.statusCode, 201);
  t.match(res.body, /App registered\./);
  const clients = await app.kp.storage.clients.listByOwner(identityId);
  t.equal(clients.length, 1);
  t.same(clients[0]!.metadata.redirect_uris, ['https://blog.example.com/cb', 'https://staging.blog.example.com/cb']);
  t.equal(clients[0]!.metadata.token_endpoint_auth_method, 'none');
});

t.test('without a session every owner operation answers 401', async (t) => {
  const { app, registered } = await setup(t);
  const anon = new Browser(app);
  for (const [method, url] of [
    ['GET', '/apps?format=json'],
    ['POST', '/apps/register'],
    ['POST', `/apps/${registered.client_id}/update`],
    ['POST', `/apps/${registered.client_id}/rotate-secret`],
    ['POST', `/apps/${registered.client_id}/revoke`],
  ] as const) {
    const res = await anon.request(method, url, method === 'POST' ? app1 : undefined);
    t.equal(res.statusCode, 401, url);
    t.match(res.json(), { ok: false, reason: 'unauthorized' });
  }
});

t.test('editing, rotation and revocation need a sensitive session (403 insufficient_assurance)', async (t) => {
  const { app, registered, signIn } = await setup(t);
  // The same owner, signed in again on another browser at passkey level only.
  const { browser } = await signIn({ username: 'ada', assurance: 'passkey' });
  for (const action of ['update', 'rotate-secret', 'revoke']) {
    const res = await browser.post(`/apps/${registered.client_id}/${action}`, { revision: 1, client_name: 'X' });
    t.equal(res.statusCode, 403, action);
    t.match(res.json(), { ok: false, reason: 'insufficient_assurance' });
  }
  const form = await browser.post(`/apps/${registered.client_id}/revoke`, '', {
    'content-type': 'application/x-www-form-urlencoded',
  });
  t.equal(form.statusCode, 303, 'a form post is sent to step up instead');
  t.equal(form.headers.location, '/auth/step-up?return=%2Fapps');
  t.ok(await app.kp.storage.clients.get(registered.client_id), 'still there');
});

t.test('a foreign client answers 404 like an unknown one', async (t) => {
  const { app, registered, signIn } = await setup(t);
  const other = await signIn({ username: 'eve', assurance: 'sensitive' });
  const operator = await registerClient(app);
  for (const id of [registered.client_id, operator.client_id, 'cl_unknown']) {
    for (const action of ['update', 'rotate-secret', 'revoke']) {
      const res = await other.browser.post(`/apps/${id}/${action}`, { revision: 1, client_name: 'Mine now' });
      t.equal(res.statusCode, 404, `${id} ${action}`);
      t.match(res.json(), { ok: false, reason: 'not_found' });
    }
  }
  const list = await other.browser.get('/apps?format=json');
  t.same(list.json().clients, []);
  t.equal((await app.kp.storage.clients.get(registered.client_id))?.metadata.client_name, 'Notes');
});

t.test('an owner edits redirect URIs with the current revision; a stale one is 409 stale_revision', async (t) => {
  const { owner, registered, app } = await setup(t);
  const res = await owner.browser.post(`/apps/${registered.client_id}/update`, {
    revision: 1,
    redirect_uris: ['https://notes.example.com/cb2'],
  });
  t.equal(res.statusCode, 200, res.body);
  t.match(res.json(), {
    ok: true,
    revision: 2,
    redirect_uris: ['https://notes.example.com/cb2'],
    client_name: 'Notes',
  });
  t.notOk('client_secret' in res.json(), 'the secret is kept, not re-issued');
  const stale = await owner.browser.post(`/apps/${registered.client_id}/update`, {
    revision: 1,
    client_name: 'Old view',
  });
  t.equal(stale.statusCode, 409);
  t.match(stale.json(), { ok: false, reason: 'stale_revision' });
  t.equal((await app.kp.storage.clients.get(registered.client_id))?.metadata.client_name, 'Notes');
  const missing = await owner.browser.post(`/apps/${registered.client_id}/update`, { client_name: 'No revision' });
  t.equal(missing.statusCode, 400);
  const bad = await owner.browser.post(`/apps/${registered.client_id}/update`, {
    revision: 2,
    redirect_uris: ['http://evil.example.com/cb#frag'],
  });
  t.equal(bad.statusCode, 400);
});

t.test('rotation shows a new secret once, and the old secret is refused at /auth/token at once', async (t) => {
  const built = await setup(t);
  const { owner, registered, app } = built;
  const before = await tokenAttempt(built, registered);
  t.not(before.json().error, 'invalid_client', 'the first secret authenticates');
  const res = await owner.browser.post(`/apps/${registered.client_id}/rotate-secret`);
  t.equal(res.statusCode, 200, res.body);
  const rotated = res.json();
  t.match(rotated, { ok: true, client_id: registered.client_id, client_secret: /^[A-Za-z0-9_-]{43}$/, revision: 2 });
  t.not(rotated.client_secret, registered.client_secret);
  t.equal((await app.kp.storage.clients.get(registered.client_id))?.secretHash, sha256Hex(rotated.client_secret));
  const old = await tokenAttempt(built, registered);
  t.equal(old.statusCode, 401);
  t.match(old.json(), { ok: false, error: 'invalid_client' });
  const fresh = await tokenAttempt(built, { client_id: registered.client_id, client_secret: rotated.client_secret });
  t.not(fresh.json().error, 'invalid_client');
  const receipts = await app.kp.storage.clients.get(registered.client_id);
  t.equal(receipts?.revision, 2);
});

t.test('revocation deletes the client; its secret stops working', async (t) => {
  const built = await setup(t);
  const { owner, registered, app } = built;
  const res = await owner.browser.post(`/apps/${registered.client_id}/revoke`);
  t.equal(res.statusCode, 200);
  t.match(res.json(), { ok: true });
  t.equal(await app.kp.storage.clients.get(registered.client_id), null);
  const after = await tokenAttempt(built, registered);
  t.match(after.json(), { ok: false, error: 'invalid_client' });
  const again = await owner.browser.post(`/apps/${registered.client_id}/revoke`);
  t.equal(again.statusCode, 404);
});

t.test('a form post from the page revokes and returns to /apps', async (t) => {
  const { owner, registered, app } = await setup(t);
  const res = await owner.browser.post(`/apps/${registered.client_id}/revoke`, '', {
    'content-type': 'application/x-www-form-urlencoded',
  });
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/apps');
  t.equal(await app.kp.storage.clients.get(registered.client_id), null);
});

t.test('a cross-origin post is refused before anything changes', async (t) => {
  const { owner, registered, app } = await setup(t);
  const res = await owner.browser.post(
    `/apps/${registered.client_id}/revoke`,
    {},
    { origin: 'https://evil.example.com' },
  );
  t.equal(res.statusCode, 403);
  t.match(res.json(), { reason: 'origin_mismatch' });
  t.ok(await app.kp.storage.clients.get(registered.client_id));
});

t.test("the apps page shows each route's access rules and the sign-in restriction in words", async (t) => {
  const { owner, services } = await setup(t);
  // Rules name only orgs the registrant administers.
  await createOrg(services, owner.identityId, { name: 'Acme' });
  const reg = await owner.browser.post('/apps/register', {
    client_name: 'Wiki gate',
    redirect_uris: ['https://wiki.example.com/_gate/callback'],
    token_endpoint_auth_method: 'client_secret_basic',
    access: { orgs: [{ slug: 'acme', roles: ['admin', 'owner'] }] },
    gateway: {
      mode: 'enforce',
      routes: [
        { path: '/', allow: { orgs: [{ slug: 'acme' }], email_domains: ['example.com'] } },
        { path: '/open' },
        { path: '/public', public: true },
      ],
    },
  });
  t.equal(reg.statusCode, 201, reg.body);
  const page = await owner.browser.get('/apps', { accept: 'text/html' });
  t.match(page.body, /data-field="sign-in-rules">Sign-in: only admins or owners of the org acme\.</);
  t.match(
    page.body,
    /<li><code>\/<\/code>: members of the org acme or accounts with a verified e-mail address at example\.com<\/li>/,
  );
  t.match(page.body, /<li><code>\/open<\/code>: any signed-in account<\/li>/);
  t.match(page.body, /<li><code>\/public<\/code>: anyone \(public\)<\/li>/);
});
