import t from 'tap';
import type { InjectOptions } from 'fastify';
import { build } from '../../helpers/build.js';

// Booting only what each test needs (docs/platform.md#test-tiers): the error path is app-wide
// infrastructure, there in a build of no area at all.
t.test('every failure is the envelope with the right status', async (t) => {
  const { app } = await build(t, { areas: [], skipReady: true, config: { 'http.bodyLimit': 1_048_576 } });
  app.post(
    '/test/echo',
    {
      schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 10 } } } },
    },
    async (request) => ({ ok: true, body: request.body }),
  );
  // An action that takes no body (no body schema), as `POST …/rotate-secret` is.
  app.post('/test/action', async (request) => ({ ok: true, body: request.body }));
  app.get('/test/boom', async () => {
    throw new Error('secret internal detail');
  });
  await app.ready();

  const cases: Array<{ name: string; request: InjectOptions; status: number; reason: string }> = [
    { name: 'unknown path', request: { method: 'GET', url: '/no/such/path' }, status: 404, reason: 'not_found' },
    {
      name: 'malformed JSON',
      request: {
        method: 'POST',
        url: '/test/echo',
        headers: { 'content-type': 'application/json' },
        payload: '{"name":',
      },
      status: 400,
      reason: 'invalid_request',
    },
    {
      name: 'schema violation',
      request: { method: 'POST', url: '/test/echo', payload: { name: 'far too long a name' } },
      status: 400,
      reason: 'invalid_request',
    },
    {
      name: 'empty JSON body',
      request: { method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/json' }, payload: '' },
      status: 400,
      reason: 'invalid_request',
    },
    {
      name: 'a 3 MB body',
      request: {
        method: 'POST',
        url: '/test/echo',
        headers: { 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'x'.repeat(3 * 1024 * 1024) }),
      },
      status: 413,
      reason: 'payload_too_large',
    },
    {
      name: 'wrong content type',
      request: { method: 'POST', url: '/test/echo', headers: { 'content-type': 'text/plain' }, payload: 'name=x' },
      status: 415,
      reason: 'unsupported_media_type',
    },
    {
      name: 'xml content type',
      request: { method: 'POST', url: '/test/echo', headers: { 'content-type': 'application/xml' }, payload: '<a/>' },
      status: 415,
      reason: 'unsupported_media_type',
    },
    { name: 'unexpected exception', request: { method: 'GET', url: '/test/boom' }, status: 500, reason: 'internal' },
  ];
  for (const c of cases) {
    const res = await app.inject(c.request);
    t.equal(res.statusCode, c.status, `${c.name}: status`);
    t.match(res.headers['content-type'], /^application\/json/, `${c.name}: JSON`);
    const body = res.json();
    t.equal(body.ok, false, `${c.name}: ok false`);
    t.equal(body.reason, c.reason, `${c.name}: reason`);
    t.notMatch(res.body, /secret internal detail|at .*\.ts:\d+|stack/i, `${c.name}: no internals leak`);
  }
  const ok = await app.inject({ method: 'POST', url: '/test/echo', payload: { name: 'ada' } });
  t.same(ok.json(), { ok: true, body: { name: 'ada' } });
  const form = await app.inject({
    method: 'POST',
    url: '/test/echo',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'name=ada',
  });
  t.equal(form.statusCode, 200, 'form bodies are understood');
  const action = await app.inject({
    method: 'POST',
    url: '/test/action',
    headers: { 'content-type': 'application/json' },
    payload: '',
  });
  t.same(action.json(), { ok: true, body: {} }, 'an action that takes no body takes an empty one as {}');
  const brokenAction = await app.inject({
    method: 'POST',
    url: '/test/action',
    headers: { 'content-type': 'application/json' },
    payload: '{"x',
  });
  t.equal(brokenAction.statusCode, 400, 'a body that is there is still parsed');
});

t.test('a bodiless method with Content-Type: application/json and no body is accepted', async (t) => {
  const admin = 'admin-token-0123456789abcdef0123456789abcdef';
  const { app } = await build(t, { areas: ['clients'], config: { adminToken: admin } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const registered = await fetch(`${base}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none' }),
  });
  const { client_id: clientId, registration_access_token: token } = (await registered.json()) as Record<string, string>;
  const json = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  // What fetch, axios and many SDKs send: the header on every request, no body on DELETE or GET.
  const read = await fetch(`${base}/register/${clientId}`, { headers: json });
  t.equal(read.status, 200, 'GET');
  const deleted = await fetch(`${base}/register/${clientId}`, { method: 'DELETE', headers: json });
  t.equal(deleted.status, 200, 'DELETE');
  t.match(await deleted.json(), { receipt: /^[0-9a-f]{64}$/ });

  const broken = await app.inject({
    method: 'DELETE',
    url: `/register/${clientId}`,
    headers: json,
    payload: '{"not json',
  });
  t.equal(broken.statusCode, 400, 'a body that is there is still parsed');
  t.equal(broken.json().reason, 'invalid_request');
  const emptyPost = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    payload: '',
  });
  t.equal(emptyPost.statusCode, 400, 'a POST still needs its body');
  t.equal(emptyPost.json().reason, 'invalid_request');
  const poisoned = await app.inject({
    method: 'POST',
    url: '/register',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    payload: '{"__proto__": {"x": 1}}',
  });
  t.equal(poisoned.statusCode, 400, 'prototype poisoning is refused as before');
});
