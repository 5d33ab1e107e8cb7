import t from 'tap';
import type { Test } from 'tap';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { ADMIN } from '../../helpers/oidc.js';
import { sha256Hex } from '#lib/crypto/sha256.js';

// One control plane for the whole file: each test uses its own accounts and clients.
const built = await buildSignedIn(t, { config: { adminToken: ADMIN } });
async function setup(_t: Test) {
  return built;
}

const admin = { authorization: `Bearer ${ADMIN}` };

t.test('GET /connectors lists every template as JSON and as a page', async (t) => {
  const { app } = await setup(t);
  const json = await app.inject({ method: 'GET', url: '/connectors?format=json' });
  t.equal(json.statusCode, 200);
  const body = json.json();
  t.same(
    body.connectors.map((c: { name: string }) => c.name),
    ['grafana', 'gitlab', 'argo-cd', 'nextcloud', 'outline', 'kubelogin', 'apache', 'oauth2-proxy'],
  );
  t.match(body.connectors[0], {
    name: 'grafana',
    title: 'Grafana',
    docs: 'docs/connectors.md#grafana',
    inputs: [{ name: 'base_url', required: true }],
    registration: {
      redirect_uris: ['https://grafana.example.com/login/generic_oauth'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  });
  const accept = await app.inject({ method: 'GET', url: '/connectors', headers: { accept: 'application/json' } });
  t.equal(accept.json().connectors.length, 8, 'Accept: application/json works too');

  const page = await app.inject({ method: 'GET', url: '/connectors', headers: { accept: 'text/html' } });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /text\/html/);
  t.match(String(page.headers['content-security-policy']), /nonce-/);
  t.match(page.body, /<h1>Connectors<\/h1>/);
  t.match(page.body, /Kubernetes \(kubectl with kubelogin\)/);
  t.notOk(/ on[a-z]+=/.test(page.body), 'no inline handlers');
});

t.test('the operator registers a connector and gets the client once and the filled-in snippet', async (t) => {
  const { app, services } = await setup(t);
  const res = await app.inject({
    method: 'POST',
    url: '/connectors/grafana',
    headers: admin,
    payload: { base_url: 'https://grafana.example.com' },
  });
  t.equal(res.statusCode, 201, res.body);
  const body = res.json();
  t.match(body, {
    ok: true,
    connector: 'grafana',
    docs: 'docs/connectors.md#grafana',
    receipt: /^[0-9a-f]{64}$/,
    client: {
      client_id: /^cl_/,
      client_secret: /^[A-Za-z0-9_-]{43}$/,
      registration_access_token: String,
      client_name: 'Grafana at grafana.example.com',
      redirect_uris: ['https://grafana.example.com/login/generic_oauth'],
      token_endpoint_auth_method: 'client_secret_basic',
      scope: 'openid email profile',
    },
    snippet: { format: 'ini', target: 'grafana.ini' },
  });
  t.notOk('ok' in body.client);
  t.ok(body.snippet.content.includes(`client_id = ${body.client.client_id}`));
  t.ok(body.snippet.content.includes(`client_secret = ${body.client.client_secret}`));
  t.ok(body.snippet.content.includes('auth_url = http://localhost:4400/auth/authorize'));
  const stored = await services.storage.clients.get(body.client.client_id);
  t.equal(stored?.ownerId, null, 'the operator owns it');
  t.equal(stored?.secretHash, sha256Hex(body.client.client_secret), 'only the hash is kept');
  // The registration is an ordinary client: its management endpoint reads it back.
  const read = await app.inject({
    method: 'GET',
    url: `/register/${body.client.client_id}`,
    headers: { authorization: `Bearer ${body.client.registration_access_token}` },
  });
  t.equal(read.statusCode, 200);
  t.notOk(read.body.includes(body.client.client_secret), 'the secret is not shown again');
});

t.test('kubelogin registers a public client with loopback redirects and no secret', async (t) => {
  const { app } = await setup(t);
  const res = await app.inject({ method: 'POST', url: '/connectors/kubelogin', headers: admin, payload: {} });
  t.equal(res.statusCode, 201, res.body);
  const body = res.json();
  t.match(body.client, {
    client_type: 'public',
    token_endpoint_auth_method: 'none',
    redirect_uris: ['http://localhost:8000', 'http://localhost:18000'],
  });
  t.notOk('client_secret' in body.client);
  t.equal(body.snippet.format, 'yaml');
});

t.test('a signed-in user registers a connector they own; the redirect URI works at /auth/authorize', async (t) => {
  const { app, signIn, services } = await setup(t);
  const { browser, identityId } = await signIn({ username: 'ada' });
  const res = await browser.post('/connectors/apache', { base_url: 'https://app.example.com' });
  t.equal(res.statusCode, 201, res.body);
  const body = res.json();
  t.equal((await services.storage.clients.get(body.client.client_id))?.ownerId, identityId);
  const list = await browser.get('/apps?format=json');
  t.match(list.json().clients, [{ client_id: body.client.client_id, client_name: 'Apache at app.example.com' }]);
  const authorize = await browser.get(
    `/auth/authorize?${new URLSearchParams({
      client_id: body.client.client_id,
      redirect_uri: 'https://app.example.com/redirect_uri',
      response_type: 'code',
      scope: 'openid email profile',
      state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGjSstw-cM',
      code_challenge_method: 'S256',
    })}`,
    { accept: 'text/html' },
  );
  t.not(authorize.statusCode, 400, 'the registered redirect URI is accepted');
  t.notMatch(authorize.body, /unknown_client|invalid_redirect_uri/);
  void app;
});

t.test('an org admin registers a connector the org owns; a member may not, nor the admin token', async (t) => {
  const { signIn, services } = await setup(t);
  const owner = await signIn({ username: 'olga' });
  const member = await signIn({ username: 'milo' });
  const ok = async (browser: typeof owner.browser, url: string, body: Record<string, unknown> = {}) => {
    const res = await browser.post(url, body);
    if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  };
  await ok(owner.browser, '/auth/orgs/create', { name: 'Initech' });
  await ok(owner.browser, '/org/initech/members/invite', { username: 'milo', role: 'member' });
  await ok(member.browser, '/org/initech/members/accept');
  const org = (await services.storage.orgs.getBySlug('initech'))!;

  const res = await owner.browser.post('/connectors/gitlab', {
    base_url: 'https://git.initech.example',
    org: 'initech',
  });
  t.equal(res.statusCode, 201, res.body);
  t.equal((await services.storage.clients.get(res.json().client.client_id))?.ownerId, org.orgId, 'the org owns it');
  const listed = await owner.browser.get('/apps?format=json&org=initech');
  t.match(listed.json().clients, [{ client_id: res.json().client.client_id }]);

  const byMember = await member.browser.post('/connectors/gitlab', {
    base_url: 'https://git.initech.example',
    org: 'initech',
  });
  t.equal(byMember.statusCode, 403);
  t.equal(byMember.json().reason, 'forbidden');
  const byToken = await services.storage.clients.listByOwner(org.orgId);
  t.equal(byToken.length, 1, 'nothing registered by the refusal');
  const viaAdminToken = await built.app.inject({
    method: 'POST',
    url: '/connectors/gitlab',
    headers: admin,
    payload: { base_url: 'https://git.initech.example', org: 'initech' },
  });
  t.equal(viaAdminToken.statusCode, 400, 'the admin token registers operator clients only');

  const form = await owner.browser.post(
    '/apps/connectors',
    new URLSearchParams({
      connector: 'grafana',
      base_url: 'https://grafana.initech.example',
      org: 'initech',
    }).toString(),
    { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
  );
  t.equal(form.statusCode, 201);
  t.equal((await services.storage.clients.listByOwner(org.orgId)).length, 2, 'the form registers for the org too');
});

t.test('refusals: unknown connector, bad inputs, no credential, wrong token', async (t) => {
  const { app } = await setup(t);
  const unknown = await app.inject({
    method: 'POST',
    url: '/connectors/jenkins',
    headers: admin,
    payload: { base_url: 'https://ci.example.com' },
  });
  t.equal(unknown.statusCode, 404);
  t.equal(unknown.json().reason, 'unknown_connector');
  for (const payload of [
    {},
    { base_url: 'http://grafana.example.com' },
    { base_url: 'https://grafana.example.com', extra: 'x' },
    { base_url: 'https://g.example.com/?q' },
  ]) {
    const res = await app.inject({ method: 'POST', url: '/connectors/grafana', headers: admin, payload });
    t.equal(res.statusCode, 400, JSON.stringify(payload));
    t.equal(res.json().reason, 'invalid_connector_input');
    t.type(res.json().message, 'string');
  }
  const notString = await app.inject({
    method: 'POST',
    url: '/connectors/grafana',
    headers: admin,
    payload: { base_url: 7 },
  });
  t.equal(notString.statusCode, 400);
  const anonymous = await app.inject({
    method: 'POST',
    url: '/connectors/grafana',
    payload: { base_url: 'https://grafana.example.com' },
  });
  t.equal(anonymous.statusCode, 401);
  const wrong = await app.inject({
    method: 'POST',
    url: '/connectors/grafana',
    headers: { authorization: 'Bearer nope' },
    payload: { base_url: 'https://grafana.example.com' },
  });
  t.equal(wrong.statusCode, 401);
  t.equal((await app.inject({ method: 'GET', url: '/apps?format=json' })).statusCode, 401);
});

t.test(
  'the /apps page: pick a tool, enter its URL, get the registration and the snippet (no JavaScript)',
  async (t) => {
    const { signIn } = await setup(t);
    const { browser } = await signIn({ username: 'bo' });
    const page = await browser.get('/apps', { accept: 'text/html' });
    t.match(page.body, /<h2 id="connectors">Connect a tool<\/h2>/);
    t.match(page.body, /<form method="post" action="\/apps\/connectors">/);
    t.match(page.body, /<label for="connector">Tool<\/label>/);
    t.match(page.body, /<option value="oauth2-proxy">oauth2-proxy<\/option>/);

    const form = (fields: Record<string, string>) =>
      browser.post('/apps/connectors', new URLSearchParams(fields).toString(), {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'text/html',
      });
    const done = await form({ connector: 'outline', base_url: 'https://wiki.example.com', upstream_url: '' });
    t.equal(done.statusCode, 201, done.body.slice(0, 300));
    t.match(done.body, /Outline connected/);
    t.match(done.body, /Client secret \(shown once, copy it now\): <code>[A-Za-z0-9_-]{43}<\/code>/);
    t.match(done.body, /<code data-snippet="outline">URL=https:\/\/wiki\.example\.com\nOIDC_CLIENT_ID=cl_/);
    t.match(done.body, /<code>https:\/\/wiki\.example\.com\/auth\/oidc\.callback<\/code>/);
    t.match(String(done.headers['content-security-policy']), /nonce-/);
    t.notOk(/ on[a-z]+=/.test(done.body), 'no inline handlers');
    t.match(
      done.body,
      /<script type="module" nonce="[^"]+" src="\/assets\/copy\.js"><\/script>/,
      "the copy button is a nonce'd module script",
    );
    const script = await browser.get('/assets/copy.js');
    t.equal(script.statusCode, 200);
    t.match(script.body, /navigator\.clipboard\.writeText/);

    const bad = await form({ connector: 'grafana', base_url: 'http://grafana.example.com' });
    t.equal(bad.statusCode, 400);
    t.match(bad.headers['content-type'], /text\/html/);
    t.match(bad.body, /<p role="alert" class="error" data-reason="invalid_connector_input">base_url must use https/);
    const none = await form({ connector: 'nope', base_url: 'https://x.example.com' });
    t.equal(none.statusCode, 404);
    t.match(none.body, /data-reason="unknown_connector"/);
  },
);

t.test('the OpenAPI document describes the connector paths', async (t) => {
  const { app } = await setup(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  t.ok(doc.paths['/connectors']?.get, 'GET /connectors');
  t.ok(doc.paths['/connectors/{name}']?.post, 'POST /connectors/{name}');
  t.ok(doc.paths['/apps/connectors']?.post, 'POST /apps/connectors');
});
