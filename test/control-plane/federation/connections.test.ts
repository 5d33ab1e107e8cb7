import t, { type Test } from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { seedProvedMailDomain } from '../../helpers/mail-domains.js';
import { ADMIN } from '../../helpers/oidc.js';
import { startUpstreamOidc, type UpstreamOidc } from '../../helpers/upstream-oidc.js';
import { TEST_ISSUER } from '../../helpers/build.js';

/**
 * Adding, reading, changing and removing connections (docs/federation.md#adding-an-oidc-connection)
 * against node-oidc-provider as the upstream: who may, what is refused, what is never shown.
 */
const admin = { authorization: `Bearer ${ADMIN}` };

let upstream: UpstreamOidc;
t.before(async () => {
  upstream = await startUpstreamOidc(t);
});

async function setUp(t: Test) {
  const built = await buildSignedIn(t, {
    config: { adminToken: ADMIN, 'fetch.allowPrivateTargets': true, 'fetch.caFile': upstream.tls.caFile },
    areas: ['orgs', 'federation'],
  });
  const owner = await built.signIn({ username: 'olivia', assurance: 'sensitive' });
  t.equal((await owner.browser.post('/auth/orgs/create', { name: 'Acme' })).statusCode, 200);
  const org = (await built.services.storage.orgs.getBySlug('acme'))!;
  // A proved mail domain, as DNS proof leaves it (its own suite proves it by TXT).
  const now = built.services.now();
  await seedProvedMailDomain(built.services.storage, org.orgId, 'acme.example', now);
  const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Record<string, unknown>) =>
    built.app.inject({ method, url, headers: admin, ...(payload ? { payload } : {}) });
  return { ...built, owner, org, api };
}

const oidc = (extra: Record<string, unknown> = {}) => ({
  issuer: upstream.issuer,
  client_id: 'keyplane',
  client_secret: 'upstream-secret-0123456789',
  ...extra,
});

t.test('an owner at sensitive adds an org connection; its secret is never shown again', async (t) => {
  const { owner, signIn } = await setUp(t);
  const created = await owner.browser.post('/org/acme/connections', {
    type: 'oidc',
    name: 'Acme SSO',
    oidc: oidc(),
    domains: ['acme.example'],
    jit: { role: 'member' },
  });
  t.equal(created.statusCode, 201, created.body);
  const body = created.json();
  t.match(body, { ok: true, connectionId: /^con_/, receipt: /^[0-9a-f]{64}$/ });
  t.equal(body.redirect_uri, `${TEST_ISSUER}/federation/${body.connectionId}/callback`);
  t.notOk(body.jwks_uri, 'no key of its own with client_secret_basic');
  const shown = await owner.browser.get(`/org/acme/connections/${body.connectionId}`);
  t.equal(shown.statusCode, 200);
  t.notMatch(shown.body, /upstream-secret/, 'the secret is never shown');
  t.match(shown.json(), {
    name: 'Acme SSO',
    domains: ['acme.example'],
    jit: { role: 'member' },
    max_assurance: 'email',
  });
  t.same(
    (await owner.browser.get('/org/acme/connections')).json().connections.map((c: { name: string }) => c.name),
    ['Acme SSO'],
  );

  // A member who is not an owner, and an owner below sensitive, are refused.
  const plain = await signIn({ username: 'olivia', assurance: 'passkey' });
  const weak = await plain.browser.post('/org/acme/connections', { type: 'oidc', name: 'X', oidc: oidc() });
  t.equal(weak.json().reason, 'insufficient_assurance');
  t.equal(
    (await plain.browser.request('PUT', `/org/acme/connections/${body.connectionId}`, { name: 'Y' })).json().reason,
    'insufficient_assurance',
  );
  const outsider = await signIn({ username: 'otto', assurance: 'sensitive' });
  t.equal(
    (await outsider.browser.get(`/org/acme/connections/${body.connectionId}`)).statusCode,
    404,
    'another org or none: no such org',
  );

  const renamed = await owner.browser.request('PUT', `/org/acme/connections/${body.connectionId}`, {
    name: 'Acme Login',
  });
  t.equal(renamed.statusCode, 200, renamed.body);
  t.equal(renamed.json().name, 'Acme Login');
  // A PUT of the whole connection may send its fixed members again unchanged; changed, they are refused.
  const whole = await owner.browser.request('PUT', `/org/acme/connections/${body.connectionId}`, {
    type: 'oidc',
    name: 'Acme Login',
    oidc: oidc(),
    domains: ['acme.example'],
    jit: { role: 'member' },
  });
  t.equal(whole.statusCode, 200, whole.body);
  const moved = await owner.browser.request('PUT', `/org/acme/connections/${body.connectionId}`, {
    oidc: oidc({ client_id: 'another' }),
  });
  t.equal(moved.statusCode, 400);
  t.match(moved.json().message, /fixed: add a new connection/);
  // "Test this connection" starts with a link (GET) or a form or an API call (POST).
  for (const method of ['GET', 'POST'] as const) {
    const test = await owner.browser.request(method, `/org/acme/connections/${body.connectionId}/test`);
    t.equal(test.statusCode, 303, `${method} …/test`);
    t.ok(String(test.headers.location).startsWith(upstream.issuer), `${method}: to the upstream's sign-in`);
  }
  t.equal((await owner.browser.request('DELETE', `/org/acme/connections/${body.connectionId}`)).statusCode, 200);
  t.equal((await owner.browser.get(`/org/acme/connections/${body.connectionId}`)).statusCode, 404);
});

t.test('an org connection names only mail domains the org has proved, and never reaches passkey', async (t) => {
  const { owner } = await setUp(t);
  const other = await owner.browser.post('/org/acme/connections', {
    type: 'oidc',
    name: 'Acme SSO',
    oidc: oidc(),
    domains: ['other.example'],
  });
  t.equal(other.statusCode, 409);
  t.equal(other.json().reason, 'domain_not_verified');
  const passkey = await owner.browser.post('/org/acme/connections', {
    type: 'oidc',
    name: 'Acme SSO',
    oidc: oidc(),
    max_assurance: 'passkey',
  });
  t.equal(passkey.statusCode, 403);
  t.equal(passkey.json().reason, 'forbidden');
});

t.test('multi-tenant issuers are refused for an org unless pinned to a tenant', async (t) => {
  const { owner } = await setUp(t);
  for (const issuer of [
    'https://accounts.google.com',
    'https://login.microsoftonline.com/common/v2.0',
    'https://login.microsoftonline.com/organizations/v2.0',
  ]) {
    const res = await owner.browser.post('/org/acme/connections', {
      type: 'oidc',
      name: 'Shared',
      oidc: oidc({ issuer }),
    });
    t.equal(res.statusCode, 400, issuer);
    t.equal(res.json().reason, 'multi_tenant_issuer', issuer);
  }
});

t.test('the operator adds instance-wide connections; they take no domains, jit or required', async (t) => {
  const { api, app } = await setUp(t);
  t.equal(
    (await app.inject({ method: 'GET', url: '/admin/connections' })).statusCode,
    401,
    'no admin token, no operator',
  );
  t.equal((await api('POST', '/admin/connections', { type: 'oidc', name: 'X', oidc: oidc() })).statusCode, 201);
  const refused = await api('POST', '/admin/connections', {
    type: 'oidc',
    name: 'Shared',
    oidc: oidc(),
    jit: { role: 'member' },
  });
  t.equal(refused.json().reason, 'invalid_request');
  const created = await api('POST', '/admin/connections', {
    type: 'oidc',
    name: 'Partner IdP',
    oidc: oidc({ token_endpoint_auth_method: 'private_key_jwt', client_secret: undefined }),
    max_assurance: 'passkey',
  });
  t.equal(created.statusCode, 201, created.body);
  const { connectionId, jwks_uri } = created.json();
  t.equal(jwks_uri, `${TEST_ISSUER}/federation/${connectionId}/jwks`);
  const jwks = (await api('GET', `/federation/${connectionId}/jwks`)).json();
  t.equal(jwks.keys.length, 1);
  t.match(jwks.keys[0], { kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
  t.notOk(jwks.keys[0].d, 'only the public half is published');
  t.same(
    (await api('GET', '/admin/connections')).json().connections.map((c: { name: string }) => c.name),
    ['X', 'Partner IdP'],
  );
  const unreachable = await api('POST', '/admin/connections', {
    type: 'oidc',
    name: 'Nowhere',
    oidc: oidc({ issuer: 'https://127.0.0.1:9/' }),
  });
  t.equal(unreachable.statusCode, 502);
  t.equal(unreachable.json().reason, 'upstream_unreachable');
});

t.test('home-realm discovery answers by the address domain alone', async (t) => {
  const { owner, app } = await setUp(t);
  const created = await owner.browser.post('/org/acme/connections', {
    type: 'oidc',
    name: 'Acme SSO',
    oidc: oidc(),
    domains: ['acme.example'],
  });
  const { connectionId } = created.json();
  const found = await app.inject({ method: 'POST', url: '/auth/discover', payload: { email: 'Nobody@Acme.Example' } });
  t.equal(found.statusCode, 200, found.body);
  t.match(found.json(), {
    ok: true,
    connection: { connectionId, name: 'Acme SSO' },
    start: new RegExp(`^/federation/${connectionId}/start\\?request=`),
  });
  t.match(found.headers['set-cookie'], /kp_fed=/, 'the pending sign-in is bound to this browser');
  const none = await app.inject({ method: 'POST', url: '/auth/discover', payload: { email: 'ada@elsewhere.example' } });
  t.same(none.json(), { ok: true, connection: null });
});
