import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { TEST_ISSUER, build } from '../../helpers/build.js';

t.test('OpenID configuration advertises what exists and nothing else', async (t) => {
  const { app } = await build(t);
  const res = await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
  t.equal(res.statusCode, 200);
  const doc = res.json();
  t.equal(doc.issuer, TEST_ISSUER);
  t.equal(doc.jwks_uri, `${TEST_ISSUER}/.well-known/jwks.json`);
  t.same(doc.response_types_supported, ['code']);
  t.same(doc.id_token_signing_alg_values_supported, ['ES256']);
  for (const [key, value] of Object.entries(doc)) {
    if (!key.endsWith('_endpoint') || typeof value !== 'string') continue;
    const path = new URL(value).pathname;
    // printRoutes() splits shared prefixes (/auth/authorize under /auth), so ask the router itself.
    t.ok(
      app.hasRoute({ method: 'GET', url: path }) || app.hasRoute({ method: 'POST', url: path }),
      `${key} (${path}) is a real route`,
    );
  }
});

t.test('JWKS: ES256 public keys only', async (t) => {
  const { app } = await build(t);
  const res = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
  t.match(res.headers['content-type'], /application\/jwk-set\+json/);
  const { keys } = res.json();
  t.ok(keys.length >= 2, 'current and next');
  for (const key of keys) {
    t.same([key.kty, key.crv, key.alg, key.use], ['EC', 'P-256', 'ES256', 'sig']);
    t.notOk(key.d);
  }
});

t.test('well-known documents', async (t) => {
  const { app } = await build(t);
  const resource = (await app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource' })).json();
  t.equal(resource.resource, TEST_ISSUER);
  t.same(resource.authorization_servers, [TEST_ISSUER]);
  const webIdentity = (await app.inject({ method: 'GET', url: '/.well-known/web-identity' })).json();
  t.same(webIdentity.provider_urls, [`${TEST_ISSUER}/fedcm/config.json`]);
  const webauthn = await app.inject({ method: 'GET', url: '/.well-known/webauthn' });
  t.match(webauthn.headers['content-type'], /application\/json/);
  t.ok(Array.isArray(webauthn.json().origins));
  const llms = await app.inject({ method: 'GET', url: '/.well-known/llms.txt' });
  t.match(llms.headers['content-type'], /text\/plain/);
  t.match(llms.body, /# Keyplane/);
  t.match(llms.body, TEST_ISSUER);
});

t.test('openapi.json is a valid OpenAPI 3.1 document listing every route', async (t) => {
  const { app } = await build(t);
  const res = await app.inject({ method: 'GET', url: '/openapi.json' });
  const doc = res.json();
  t.equal(doc.openapi, '3.1.0');
  t.equal(doc.info.version, 'svc-api-1');
  const validator = new Validator();
  const result = await validator.validate(doc);
  t.same(result.errors, undefined, 'no schema errors');
  t.equal(result.valid, true);
  for (const path of [
    '/healthz',
    '/readyz',
    '/metrics',
    '/.well-known/openid-configuration',
    '/.well-known/jwks.json',
    '/openapi.json',
    '/changelog',
    '/agents.json',
    '/agent',
    '/auth',
    '/.well-known/llms.txt',
    '/saml/metadata',
    '/saml/sso',
    '/saml/slo',
    '/saml/providers',
    '/saml/providers/{id}',
    '/apps/saml',
    '/mcp',
    '/mcp/tools',
  ]) {
    t.ok(doc.paths[path], `${path} is described`);
  }
  t.ok(doc.components.schemas.envelope, 'the envelope schema is a shared component');
});

t.test('changelog: HTML, or versioned JSON by query or Accept', async (t) => {
  const { app } = await build(t);
  const html = await app.inject({ method: 'GET', url: '/changelog' });
  t.match(html.headers['content-type'], /text\/html/);
  t.match(html.body, /<h1>Changelog<\/h1>/);
  for (const request of [
    { url: '/changelog?format=json' },
    { url: '/changelog', headers: { accept: 'application/json' } },
  ]) {
    const res = await app.inject({ method: 'GET', ...request });
    const body = res.json();
    t.equal(body.ok, true);
    t.ok(body.versions.length >= 2);
    for (const version of body.versions) {
      t.match(version, { version: String, changes: Array });
      t.ok(version.date === null || /^\d{4}-\d{2}-\d{2}$/.test(version.date), `${version.version} has a date`);
    }
    t.same(body.versions.find((v: { version: string }) => v.version === '0.1.0').date, '2026-11-22');
  }
  t.match(html.body, /<h2 id="v-0\.1\.0">0\.1\.0/);
  t.match(html.body, /<code>keyplane up<\/code>/, 'inline code is rendered');
  t.notMatch(html.body, /`/, 'no raw backticks');
  const bad = await app.inject({ method: 'GET', url: '/changelog?format=xml' });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().reason, 'invalid_request');
});

t.test('agent documents: contract and secret-free introspection of live routes', async (t) => {
  const { app } = await build(t);
  const contract = (await app.inject({ method: 'GET', url: '/agents.json' })).json();
  t.equal(contract.ok, true);
  t.equal(contract.documents.introspection, `${TEST_ISSUER}/agent`);
  const agent = await app.inject({ method: 'GET', url: '/agent' });
  const body = agent.json();
  t.equal(body.ok, true);
  t.ok(body.read_surfaces.some((s: { path: string }) => s.path === '/.well-known/openid-configuration'));
  t.ok(Array.isArray(body.callable_actions));
  t.notMatch(agent.body, /"d":|PRIVATE KEY|"client_secret":"/, 'no key material or secrets');

  // All three documents come from the route table behind /openapi.json: every described operation is in each.
  const openapi = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const operations: string[] = [];
  for (const [path, item] of Object.entries(openapi.paths as Record<string, Record<string, unknown>>)) {
    for (const method of Object.keys(item))
      if (['get', 'post', 'put', 'delete', 'patch'].includes(method))
        operations.push(`${method.toUpperCase()} ${path}`);
  }
  const listed = (list: Array<{ method: string; path: string }>) => list.map((s) => `${s.method} ${s.path}`).sort();
  t.same(
    listed([...body.read_surfaces, ...body.callable_actions]),
    [...operations].sort(),
    '/agent lists every operation',
  );
  t.same(listed(contract.routes), [...operations].sort(), '/agents.json lists every operation');
  const llms = (await app.inject({ method: 'GET', url: '/.well-known/llms.txt' })).body;
  for (const operation of operations) t.ok(llms.includes(`- ${operation}`), `llms.txt names ${operation}`);
  t.match(contract.documents, { mcp: `${TEST_ISSUER}/mcp`, changelog: `${TEST_ISSUER}/changelog?format=json` });
  for (const doc of [JSON.stringify(contract), llms]) {
    t.notMatch(doc, /"d":|PRIVATE KEY|"client_secret":"|admin-token|test-master-key/, 'no key material or secrets');
  }
});

t.test('health, readiness and metrics', async (t) => {
  const { app } = await build(t);
  t.same((await app.inject({ method: 'GET', url: '/healthz' })).json(), { ok: true, status: 'alive' });
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 200);
  t.same(ready.json(), { ok: true, storage: 'ok', keys: 'ok', state: 'memory' });
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.headers['content-type'], /text\/plain/);
  t.match(metrics.body, /keyplane_http_requests_total\{method="GET",route="\/readyz",status="200"\} 1/);
  t.match(metrics.body, /keyplane_http_request_duration_seconds_bucket/);
});

t.test('readiness fails with the envelope when storage is down', async (t) => {
  const { app, services } = await build(t);
  await services.storage.close();
  const res = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(res.statusCode, 503);
  t.equal(res.json().reason, 'not_ready');
});

t.test('the public documents answer CORS from any origin; other discovery files stay without it', async (t) => {
  const { app } = await build(t);
  const origin = { origin: 'https://spa.example' };
  for (const url of [
    '/.well-known/openid-configuration',
    '/.well-known/oauth-authorization-server',
    '/.well-known/jwks.json',
    '/.well-known/oauth-protected-resource',
  ]) {
    const res = await app.inject({ method: 'GET', url, headers: origin });
    t.equal(res.headers['access-control-allow-origin'], '*', url);
    t.notOk(res.headers['access-control-allow-credentials'], `${url}: never with credentials`);
  }
  const webauthn = await app.inject({ method: 'GET', url: '/.well-known/webauthn', headers: origin });
  t.notOk(webauthn.headers['access-control-allow-origin']);
});
