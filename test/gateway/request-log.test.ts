import t from 'tap';
import { request } from 'undici';
import { requestIdFor } from '#lib/logging/request-log.js';
import { startTestGateway, startUpstream } from './helpers.js';

/**
 * The gateway logs like the control plane: a request id on every request (a trusted proxy's, or
 * made), echoed to the caller and forwarded upstream as X-Request-Id, and one JSON access line
 * per request with the query's credentials redacted, unless `accessLog` is off.
 */

const POLICY = { mode: 'enforce' as const, routes: [{ path: '/', min_assurance: 'email' as const }] };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function accessLines(logs: string[]): Array<Record<string, any>> {
  return logs
    .join('')
    .split('\n')
    .filter((line) => line.includes('"msg":"request completed"'))
    .map((line) => JSON.parse(line) as Record<string, any>);
}

t.test('requestIdFor believes only a trusted proxy, and only a short plain id', async (t) => {
  t.equal(requestIdFor('lb-1234.abc', true), 'lb-1234.abc');
  t.match(requestIdFor('lb-1234.abc', false), UUID, 'a client cannot choose it');
  t.match(requestIdFor('x'.repeat(129), true), UUID, 'too long');
  t.match(requestIdFor('a b\n{"forged":1}', true), UUID, 'no spaces or line breaks');
  t.match(requestIdFor(['a', 'b'], true), UUID, 'one value only');
  t.match(requestIdFor(undefined, true), UUID);
});

t.test('from a trusted proxy: its id is echoed, forwarded upstream and logged', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY });
  const cookie = await gw.sessionCookie();
  const res = await request(`${gw.url}/app?code=secret-code&page=2`, {
    headers: { cookie, 'x-request-id': 'lb-7f3a' },
  });
  await res.body.text();
  t.equal(res.statusCode, 200);
  t.equal(res.headers['x-request-id'], 'lb-7f3a');
  t.equal(upstream.last().headers['x-request-id'], 'lb-7f3a');
  const line = accessLines(gw.logs).find((entry) => entry.reqId === 'lb-7f3a');
  t.match(line, {
    level: 30,
    service: 'gateway',
    req: { method: 'GET', url: '/app?code=[redacted]&page=2', remoteAddress: '127.0.0.1' },
    res: { statusCode: 200 },
  });
  t.type(line?.responseTime, 'number');
  t.notOk(gw.logs.join('').includes('secret-code'), 'the code never reaches the log');
});

t.test("from anyone else: a new id replaces the client's, and refusals are logged too", async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, {
    upstream: upstream.url,
    policy: POLICY,
    overrides: { trustedProxies: ['10.0.0.0/8'] },
  });
  const cookie = await gw.sessionCookie();
  const res = await request(`${gw.url}/app`, { headers: { cookie, 'x-request-id': 'forged' } });
  await res.body.text();
  const id = res.headers['x-request-id'] as string;
  t.match(id, UUID);
  t.equal(upstream.last().headers['x-request-id'], id, 'the upstream sees the same new id');
  const api = await request(`${gw.url}/app`, { headers: { accept: 'application/json' } });
  await api.body.text();
  t.equal(api.statusCode, 401);
  const lines = accessLines(gw.logs);
  t.ok(
    lines.some((line) => line.reqId === id && line.res.statusCode === 200),
    'the proxied request',
  );
  t.ok(
    lines.some((line) => line.reqId === api.headers['x-request-id'] && line.res.statusCode === 401),
    'the refused one',
  );
  t.notOk(
    lines.some((line) => line.reqId === 'forged'),
    'the forged id is nowhere',
  );
});

t.test('accessLog: false writes no access line, and the id still travels', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, overrides: { accessLog: false } });
  const res = await request(`${gw.url}/app`, { headers: { cookie: await gw.sessionCookie() } });
  await res.body.text();
  t.match(res.headers['x-request-id'], UUID);
  t.equal(upstream.last().headers['x-request-id'], res.headers['x-request-id']);
  t.same(accessLines(gw.logs), []);
});
