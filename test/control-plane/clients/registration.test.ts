import t from 'tap';
import { Database } from '../../../control-plane/src/storage/sqlite/driver.js';
import { join } from 'node:path';
import { build, TEST_ISSUER } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { sha256Hex } from '#lib/crypto/sha256.js';

const ADMIN = 'admin-token-0123456789abcdef0123456789abcdef';
const admin = { authorization: `Bearer ${ADMIN}` };

const webClient = {
  client_name: 'Notes',
  redirect_uris: ['https://notes.example.com/callback', 'https://staging.notes.example.com/callback'],
  post_logout_redirect_uris: ['https://notes.example.com/'],
  grant_types: ['authorization_code', 'refresh_token'],
  scope: 'openid email profile offline_access',
  resources: ['https://api.notes.example.com'],
  access: { humans: true, agents: true },
  token_endpoint_auth_method: 'client_secret_basic',
};

async function setup(t: Parameters<typeof build>[0], config: Record<string, unknown> = { adminToken: ADMIN }) {
  return build(t, { config });
}

t.test('registers a confidential client with the admin token and shows the secret once', async (t) => {
  const { app, config } = await setup(t);
  const res = await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient });
  t.equal(res.statusCode, 201);
  t.match(res.headers['cache-control'], /no-store/);
  const body = res.json();
  t.notOk('ok' in body, 'RFC 7591 members only (and the receipt)');
  t.match(body, {
    client_id: /^cl_/,
    client_secret: /^[A-Za-z0-9_-]{43}$/,
    client_secret_expires_at: 0,
    registration_access_token: /^[A-Za-z0-9_-]{43}$/,
    registration_client_uri: `${TEST_ISSUER}/register/${body.client_id}`,
    revision: 1,
    client_type: 'confidential',
    redirect_uris: webClient.redirect_uris,
    resources: webClient.resources,
    access: { humans: true, agents: true },
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: webClient.scope,
    token_endpoint_auth_method: 'client_secret_basic',
  });

  const read = await app.inject({
    method: 'GET',
    url: `/register/${body.client_id}`,
    headers: { authorization: `Bearer ${body.registration_access_token}` },
  });
  t.equal(read.statusCode, 200);
  t.notOk('client_secret' in read.json(), 'the secret is not shown again');
  t.notOk('registration_access_token' in read.json());
  t.equal(read.json().client_name, 'Notes');

  // Only hashes reach the database.
  const db = new Database(join(config.dataDir, 'keyplane.db'), { readonly: true });
  t.teardown(() => db.close());
  const row = db.prepare('SELECT * FROM oidc_clients WHERE client_id = ?').get(body.client_id) as Record<
    string,
    unknown
  >;
  t.equal(row.secret_hash, sha256Hex(body.client_secret));
  t.equal(row.registration_token_hash, sha256Hex(body.registration_access_token));
  const dump = JSON.stringify(db.prepare('SELECT * FROM oidc_clients').all());
  t.notOk(dump.includes(body.client_secret), 'the secret is not stored');
  t.notOk(dump.includes(body.registration_access_token), 'the registration token is not stored');
});

t.test('registers a public client without a secret and advertises the endpoint', async (t) => {
  const { app } = await setup(t);
  const res = await app.inject({
    method: 'POST',
    url: '/register',
    headers: admin,
    payload: { redirect_uris: ['http://localhost:5173/cb'], token_endpoint_auth_method: 'none' },
  });
  t.equal(res.statusCode, 201);
  const body = res.json();
  t.match(body, {
    client_type: 'public',
    token_endpoint_auth_method: 'none',
    scope: 'openid',
    grant_types: ['authorization_code'],
    access: { humans: true, agents: false },
    resources: [],
    dpop_bound_access_tokens: false,
  });
  t.notOk('client_secret' in body);
  t.notOk('client_secret_expires_at' in body);
  const discovery = (await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
  t.equal(discovery.registration_endpoint, `${TEST_ISSUER}/register`);
  const related = (await app.inject({ method: 'GET', url: '/.well-known/webauthn' })).json();
  t.same(related.origins, [], 'only clients with in-place sign-in contribute related origins (docs/in-place.md)');
});

t.test('refuses registration without a valid admin token', async (t) => {
  const { app } = await setup(t);
  const cases: Array<[string, Record<string, string>]> = [
    ['no credential', {}],
    ['wrong token', { authorization: `Bearer ${ADMIN}x` }],
    ['basic scheme', { authorization: `Basic ${Buffer.from(`a:${ADMIN}`).toString('base64')}` }],
    ['empty bearer', { authorization: 'Bearer ' }],
  ];
  for (const [name, headers] of cases) {
    const res = await app.inject({ method: 'POST', url: '/register', headers, payload: webClient });
    t.equal(res.statusCode, 401, name);
    t.match(res.json(), { ok: false, reason: 'unauthorized', error: 'invalid_token' }, name);
    t.match(res.headers['www-authenticate'], /^Bearer/, name);
  }
});

t.test('refuses admin-token registration when no admin token is configured', async (t) => {
  const { app } = await setup(t, {});
  const res = await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient });
  t.equal(res.statusCode, 401);
  t.equal(res.json().reason, 'unauthorized');
});

t.test('registers with a signed-in session, which owns the client', async (t) => {
  const { app, services, signIn } = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { browser, identityId } = await signIn({ username: 'ada' });
  const res = await browser.post('/register', {
    redirect_uris: ['https://ada.example.com/cb'],
    token_endpoint_auth_method: 'none',
  });
  t.equal(res.statusCode, 201);
  const stored = await services.storage.clients.get(res.json().client_id);
  t.equal(stored?.ownerId, identityId);
  const foreign = await browser.post(
    '/register',
    { redirect_uris: ['https://ada.example.com/cb'] },
    { origin: 'https://evil.example.com' },
  );
  t.equal(foreign.statusCode, 403, 'a session request from another origin is refused');
  const anonymous = await app.inject({
    method: 'POST',
    url: '/register',
    payload: { redirect_uris: ['https://ada.example.com/cb'] },
  });
  t.equal(anonymous.statusCode, 401);
});

t.test('refuses bad redirect URIs with invalid_redirect_uri', async (t) => {
  const { app } = await setup(t);
  const bad = [
    undefined,
    [],
    ['http://notes.example.com/cb'],
    ['https://notes.example.com/cb#frag'],
    ['https://*.example.com/cb'],
    ['/relative'],
    ['https://user:pw@notes.example.com/cb'],
    ['javascript:alert(1)'],
    'https://notes.example.com/cb',
  ];
  for (const redirect_uris of bad) {
    const res = await app.inject({
      method: 'POST',
      url: '/register',
      headers: admin,
      payload: { ...webClient, redirect_uris },
    });
    t.equal(res.statusCode, 400, JSON.stringify(redirect_uris));
    t.match(
      res.json(),
      { ok: false, reason: 'invalid_redirect_uri', error: 'invalid_redirect_uri', error_description: String },
      JSON.stringify(redirect_uris),
    );
  }
  const logout = await app.inject({
    method: 'POST',
    url: '/register',
    headers: admin,
    payload: { ...webClient, post_logout_redirect_uris: ['http://example.com/'] },
  });
  t.equal(logout.json().reason, 'invalid_redirect_uri', 'post-logout URIs follow the same rules');
});

t.test('refuses invalid metadata with invalid_client_metadata', async (t) => {
  const { app } = await setup(t);
  const cases: Record<string, Record<string, unknown>> = {
    'implicit response type': { response_types: ['token'] },
    'hybrid response type': { response_types: ['code id_token'] },
    'unknown grant': { grant_types: ['authorization_code', 'password'] },
    'client credentials grant': { grant_types: ['client_credentials'] },
    'offline_access without refresh grant': { grant_types: ['authorization_code'] },
    'unknown auth method': { token_endpoint_auth_method: 'client_secret_jwt' },
    'resource with fragment': { resources: ['https://api.example.com#x'] },
    'http resource': { resources: ['http://api.example.com'] },
    'malformed scope': { scope: 'openid  email' },
    'access without anyone': { access: { humans: false, agents: false } },
    'access not booleans': { access: { humans: 'yes', agents: false } },
    'private_key_jwt without keys': { token_endpoint_auth_method: 'private_key_jwt' },
    'private jwks': {
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b', d: 'c' }] },
    },
    'both jwks and jwks_uri': {
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [{ kty: 'EC' }] },
      jwks_uri: 'https://notes.example.com/jwks',
    },
    'gateway bad mode': { gateway: { mode: 'block', routes: [] } },
    'gateway canary without percent': { gateway: { mode: 'canary', routes: [] } },
    'gateway percent out of range': { gateway: { mode: 'canary', canary_percent: 101, routes: [] } },
    'gateway route without slash': { gateway: { mode: 'enforce', routes: [{ path: 'app' }] } },
    'gateway reserved path': { gateway: { mode: 'enforce', routes: [{ path: '/_gate/auth' }] } },
    'gateway bad assurance': { gateway: { mode: 'enforce', routes: [{ path: '/', min_assurance: 'root' }] } },
    'gateway bad principal': { gateway: { mode: 'enforce', routes: [{ path: '/', principals: ['robot'] }] } },
    'gateway bad dpop': { gateway: { mode: 'enforce', routes: [{ path: '/', dpop: 'maybe' }] } },
    'gateway public and strict': {
      gateway: { mode: 'enforce', routes: [{ path: '/', public: true, min_assurance: 'passkey' }] },
    },
    'gateway unknown route field': { gateway: { mode: 'enforce', routes: [{ path: '/', admin: true }] } },
    'gateway duplicate path': { gateway: { mode: 'enforce', routes: [{ path: '/a' }, { path: '/a' }] } },
  };
  for (const [name, change] of Object.entries(cases)) {
    const res = await app.inject({
      method: 'POST',
      url: '/register',
      headers: admin,
      payload: { ...webClient, ...change },
    });
    t.equal(res.statusCode, 400, name);
    t.match(res.json(), { ok: false, reason: 'invalid_client_metadata', error: 'invalid_client_metadata' }, name);
  }
});

t.test('stores a gateway policy and private_key_jwt keys', async (t) => {
  const { app } = await setup(t);
  const gateway = {
    mode: 'canary',
    canary_percent: 10,
    routes: [
      { path: '/', min_assurance: 'passkey' },
      { path: '/admin', min_assurance: 'sensitive', principals: ['human'] },
      { path: '/api', dpop: 'required', scopes: ['notes.read'], principals: ['human', 'agent'] },
      { path: '/health', public: true },
    ],
  };
  const jwks = { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', kid: 'k1' }] };
  const res = await app.inject({
    method: 'POST',
    url: '/register',
    headers: admin,
    payload: {
      ...webClient,
      scope: 'openid notes.read',
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks,
      gateway,
    },
  });
  t.equal(res.statusCode, 201);
  t.same(res.json().gateway, gateway);
  t.same(res.json().jwks, jwks);
  t.notOk('client_secret' in res.json(), 'private_key_jwt clients get no secret');
  t.equal(res.json().client_type, 'confidential');
});

t.test('updates with the registration access token and the current revision (RFC 7592)', async (t) => {
  const { app } = await setup(t);
  const created = (await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient })).json();
  const auth = { authorization: `Bearer ${created.registration_access_token}` };
  const url = `/register/${created.client_id}`;

  const update = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: {
      ...webClient,
      client_id: created.client_id,
      revision: 1,
      redirect_uris: ['https://notes.example.com/callback2'],
    },
  });
  t.equal(update.statusCode, 200);
  t.match(update.json(), { revision: 2, redirect_uris: ['https://notes.example.com/callback2'] });
  t.notOk('client_secret' in update.json(), 'the secret is kept and not shown');

  const stale = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: { ...webClient, client_id: created.client_id, revision: 1 },
  });
  t.equal(stale.statusCode, 409);
  t.equal(stale.json().reason, 'stale_revision');
  t.equal(
    (await app.inject({ method: 'GET', url, headers: auth })).json().redirect_uris[0],
    'https://notes.example.com/callback2',
    'the stale update changed nothing',
  );

  const noRevision = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: { ...webClient, client_id: created.client_id },
  });
  t.equal(noRevision.statusCode, 400);
  t.equal(noRevision.json().reason, 'invalid_request');
  const otherId = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: { ...webClient, client_id: 'cl_other', revision: 2 },
  });
  t.equal(otherId.json().reason, 'invalid_request');
  const chosenSecret = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: { ...webClient, client_id: created.client_id, revision: 2, client_secret: 'mine' },
  });
  t.equal(chosenSecret.json().reason, 'invalid_client_metadata', 'a client cannot choose its secret');
  const badRedirect = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: { ...webClient, client_id: created.client_id, revision: 2, redirect_uris: ['http://evil.example.com'] },
  });
  t.equal(badRedirect.json().reason, 'invalid_redirect_uri');

  // Echoing back what a read returned (read-only fields included) is a valid update.
  const read = (await app.inject({ method: 'GET', url, headers: auth })).json();
  const echo = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: { ...read, token_endpoint_auth_method: 'none' },
  });
  t.equal(echo.statusCode, 200);
  t.match(echo.json(), { revision: 3, client_type: 'public' });
  t.notOk('client_secret_expires_at' in echo.json(), 'a public client holds no secret');
  const back = await app.inject({
    method: 'PUT',
    url,
    headers: auth,
    payload: { ...webClient, client_id: created.client_id, revision: 3 },
  });
  t.match(
    back.json(),
    { revision: 4, client_type: 'confidential', client_secret: /^[A-Za-z0-9_-]{43}$/ },
    'becoming confidential issues a new secret, shown once',
  );
  t.not(back.json().client_secret, created.client_secret);
});

t.test('of two concurrent updates on the same revision exactly one wins', async (t) => {
  const { app } = await setup(t);
  const created = (await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient })).json();
  const auth = { authorization: `Bearer ${created.registration_access_token}` };
  const url = `/register/${created.client_id}`;
  const results = await Promise.all(
    ['https://a.example.com/cb', 'https://b.example.com/cb'].map((uri) =>
      app.inject({
        method: 'PUT',
        url,
        headers: auth,
        payload: { ...webClient, client_id: created.client_id, revision: 1, redirect_uris: [uri] },
      }),
    ),
  );
  t.same(results.map((r) => r.statusCode).sort(), [200, 409]);
  t.equal(results.find((r) => r.statusCode === 409)?.json().reason, 'stale_revision');
  const winner = results.find((r) => r.statusCode === 200)!.json();
  const read = (await app.inject({ method: 'GET', url, headers: auth })).json();
  t.same(read.redirect_uris, winner.redirect_uris, "the stored registration is the winner's");
  t.equal(read.revision, 2);
});

t.test('refuses management without the right registration access token', async (t) => {
  const { app } = await setup(t);
  const one = (await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient })).json();
  const two = (await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient })).json();
  const cases: Array<[string, string, Record<string, string>]> = [
    ['no token', `/register/${one.client_id}`, {}],
    [
      "another client's token",
      `/register/${one.client_id}`,
      { authorization: `Bearer ${two.registration_access_token}` },
    ],
    ['the admin token', `/register/${one.client_id}`, admin],
    ['unknown client', '/register/cl_nope', { authorization: `Bearer ${one.registration_access_token}` }],
  ];
  for (const [name, url, headers] of cases) {
    for (const method of ['GET', 'PUT', 'DELETE'] as const) {
      const res = await app.inject({
        method,
        url,
        headers,
        ...(method === 'PUT' ? { payload: { ...webClient, client_id: one.client_id, revision: 1 } } : {}),
      });
      t.equal(res.statusCode, 401, `${method} ${name}`);
      t.equal(res.json().reason, 'unauthorized', `${method} ${name}`);
    }
  }
});

t.test('deletes a client with its registration access token', async (t) => {
  const { app, services } = await setup(t);
  const created = (await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient })).json();
  const auth = { authorization: `Bearer ${created.registration_access_token}` };
  const res = await app.inject({ method: 'DELETE', url: `/register/${created.client_id}`, headers: auth });
  t.equal(res.statusCode, 200);
  t.match(res.json(), { receipt: /^[0-9a-f]{64}$/ });
  t.equal(await services.storage.clients.get(created.client_id), null);
  const again = await app.inject({ method: 'GET', url: `/register/${created.client_id}`, headers: auth });
  t.equal(again.statusCode, 401, 'the token dies with the client');
});

t.test('records client events with opaque ids only, in the same transaction', async (t) => {
  const { app, services } = await setup(t);
  const seen: Array<Record<string, unknown>> = [];
  services.events.subscribe((_tx, event) => {
    seen.push(event as unknown as Record<string, unknown>);
  });
  const created = (await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient })).json();
  const auth = { authorization: `Bearer ${created.registration_access_token}` };
  const updated = await app.inject({
    method: 'PUT',
    url: `/register/${created.client_id}`,
    headers: auth,
    payload: { ...webClient, client_id: created.client_id, revision: 1 },
  });
  t.match(updated.json().receipt, /^[0-9a-f]{64}$/, 'updates are receipted');
  const deleted = await app.inject({ method: 'DELETE', url: `/register/${created.client_id}`, headers: auth });
  t.match(deleted.json().receipt, /^[0-9a-f]{64}$/, 'deletions are receipted');
  const mine = seen.filter((e) => String(e.type).startsWith('client.'));
  t.match(created.receipt, /^[0-9a-f]{64}$/, 'registration is receipted');
  const lookup = await app.inject({ method: 'GET', url: `/receipts/${created.receipt}` });
  t.equal(lookup.statusCode, 200);
  t.match(lookup.json().receipt, { kind: 'client.registered', clientId: created.client_id });
  t.match(mine, [
    { type: 'client.registered', clientId: created.client_id, ownerId: null, by: 'admin', revision: 1 },
    { type: 'client.updated', clientId: created.client_id, revision: 2, secretIssued: false },
    { type: 'client.deleted', clientId: created.client_id },
  ]);
  const text = JSON.stringify(mine);
  t.notOk(
    text.includes(created.client_secret) || text.includes(created.registration_access_token),
    'no secret in events',
  );

  services.events.subscribe((_tx, event) => {
    if (event.type === 'client.registered') throw new Error('ledger down');
  });
  const failed = await app.inject({ method: 'POST', url: '/register', headers: admin, payload: webClient });
  t.equal(failed.statusCode, 500);
  const count = seen.filter((e) => e.type === 'client.registered').length;
  t.equal(count, 2, 'the event was attempted');
  t.same(await services.storage.clients.allRedirectUris(), [], 'the failed registration left no client behind');
});

t.test("in_place is client metadata an owner may set; first_party stays the operator's", async (t) => {
  const { app, signIn } = await buildSignedIn(t, { config: { adminToken: ADMIN } });
  const { browser } = await signIn({ username: 'ada' });
  const owned = await browser.post('/register', {
    redirect_uris: ['https://ada.example.com/cb'],
    token_endpoint_auth_method: 'none',
    in_place: true,
    first_party: true,
  });
  t.equal(owned.statusCode, 400);
  t.equal(owned.json().reason, 'invalid_client_metadata');
  const plain = await browser.post('/register', {
    redirect_uris: ['https://ada.example.com/cb'],
    token_endpoint_auth_method: 'none',
    in_place: true,
  });
  t.match(plain.json(), { in_place: true });
  t.notOk(plain.json().first_party);
  const operator = await app.inject({
    method: 'POST',
    url: '/register',
    headers: admin,
    payload: { ...webClient, in_place: true, first_party: true },
  });
  t.match(operator.json(), { in_place: true, first_party: true });
  const bad = await app.inject({
    method: 'POST',
    url: '/register',
    headers: admin,
    payload: { ...webClient, in_place: 'yes' },
  });
  t.equal(bad.json().reason, 'invalid_client_metadata');
});
