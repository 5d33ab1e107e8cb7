import t from 'tap';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { request } from 'undici';
import { rawHttp, startTestGateway } from './helpers.js';

const POLICY = { mode: 'enforce' as const, routes: [{ path: '/', min_assurance: 'email' as const }] };

t.test('reserved /_gate paths answer with envelopes', async (t) => {
  const gw = await startTestGateway(t, { policy: POLICY });
  const unknown = await request(`${gw.url}/_gate/nothing`);
  t.equal(unknown.statusCode, 404);
  t.match(await unknown.body.json(), { ok: false, reason: 'not_found' });
  for (const [path, method] of [
    ['/_gate/jwks', 'POST'],
    ['/_gate/signin', 'POST'],
    ['/_gate/signout', 'PUT'],
  ] as const) {
    const res = await request(`${gw.url}${path}`, { method });
    t.equal(res.statusCode, 405, `${method} ${path}`);
    t.match(await res.body.json(), { reason: 'method_not_allowed' });
  }
  const badAcr = await request(`${gw.url}/_gate/signin?acr_values=platinum`);
  t.equal(badAcr.statusCode, 400);
  t.match(await badAcr.body.json(), { reason: 'invalid_request' });
  const post = await request(`${gw.url}/_gate/signout`, { method: 'POST' });
  t.equal(post.statusCode, 302, 'sign-out also takes POST');
  const head = await request(`${gw.url}/healthz`, { method: 'HEAD' });
  t.equal(head.statusCode, 200);
  await head.body.dump();
});

t.test('without a client id sign-in is not ready; without an upstream only forward auth works', async (t) => {
  const anonymousClient = await startTestGateway(t, { overrides: { clientId: undefined } });
  const signin = await request(`${anonymousClient.url}/_gate/signin`);
  t.equal(signin.statusCode, 503);
  t.match(await signin.body.json(), { reason: 'not_ready' });
  await t.rejects(anonymousClient.configure(POLICY), { code: 'wrong_audience' }, 'and no config can be for it');
  const gw = await startTestGateway(t, { policy: POLICY });
  const cookie = await gw.sessionCookie();
  const proxied = await request(`${gw.url}/app`, { headers: { cookie } });
  t.equal(proxied.statusCode, 502);
  t.match(await proxied.body.json(), { reason: 'upstream_unavailable' });
  t.equal((await request(`${gw.url}/_gate/auth`, { headers: { cookie } })).statusCode, 200);
  const upgrade = await rawHttp(
    gw.url,
    `GET /socket HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nCookie: ${cookie}\r\n\r\n`,
  );
  t.match(upgrade, /^HTTP\/1\.1 502 /);
  const badPath = await rawHttp(
    gw.url,
    'GET /a/../b HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
  );
  t.match(badPath, /^HTTP\/1\.1 400 /);
  t.match(badPath, /"reason":"invalid_path"/);
});

t.test('signed evidence reports the held config, counts by reason and the last enforcement', async (t) => {
  const gw = await startTestGateway(t);
  const jwks = createLocalJWKSet((await (await request(`${gw.url}/_gate/jwks`)).body.json()) as { keys: [] });
  const before = await jwtVerify(await gw.running.gateway.evidence(), jwks, {
    issuer: gw.url,
    audience: 'http://localhost:4400',
    typ: 'keyplane-gateway-evidence+jwt',
  });
  t.match(
    before.payload,
    { config: null, last_enforcement_at: null, client_id: 'gw-test' },
    'no config: nothing can look enforced',
  );
  await (await request(`${gw.url}/app`)).body.dump();

  await gw.configure(POLICY);
  const cookie = await gw.sessionCookie();
  await (await request(`${gw.url}/_gate/auth`, { headers: { cookie } })).body.dump();
  await (await request(`${gw.url}/_gate/auth`)).body.dump();
  await (await request(`${gw.url}/_gate/auth`)).body.dump();
  const jws = await gw.running.gateway.evidence(30);
  const { payload, protectedHeader } = await jwtVerify(jws, jwks, {
    issuer: gw.url,
    audience: 'http://localhost:4400',
  });
  t.equal(protectedHeader.typ, 'keyplane-gateway-evidence+jwt');
  t.match(payload, {
    sub: 'gw-test',
    config: { version: 1, hash: gw.running.gateway.configHolder.current!.hash, mode: 'enforce' },
    counts: { allowed: 1, refused: { unauthorized: 2, gateway_not_configured: 1 } },
  });
  t.type(payload['last_enforcement_at'], 'string');
  t.equal(payload.exp! - payload.iat!, 30);
});
