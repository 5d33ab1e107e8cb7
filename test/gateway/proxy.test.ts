import t from 'tap';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { request } from 'undici';
import { DEFAULT_IDENTITY, rawHttp, startTestGateway, startUpgradingUpstream, startUpstream } from './helpers.js';

const OPEN = {
  mode: 'enforce' as const,
  routes: [
    { path: '/', min_assurance: 'email' as const },
    { path: '/public', public: true },
  ],
};

t.test('fails closed until it holds a signed config', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url });
  t.equal((await request(`${gw.url}/healthz`)).statusCode, 200);
  const ready = await request(`${gw.url}/readyz`);
  t.equal(ready.statusCode, 503);
  t.match(await ready.body.json(), { ok: false, reason: 'gateway_not_configured' });
  const cookie = await gw.sessionCookie();
  for (const path of ['/', '/public/x', '/anything']) {
    const res = await request(`${gw.url}${path}`, { headers: { cookie } });
    t.equal(res.statusCode, 503, path);
    t.match(await res.body.json(), { ok: false, reason: 'gateway_not_configured' });
  }
  t.equal(upstream.seen.length, 0, 'nothing reached the upstream');
  await gw.configure(OPEN);
  t.match(await (await request(`${gw.url}/readyz`)).body.json(), { ok: true, configVersion: 1 });
});

t.test('proxies a session with identity headers and an assertion that verifies with /_gate/jwks', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = `${await gw.sessionCookie()}; app_pref=dark`;
  const res = await request(`${gw.url}/app/page?q=1`, { headers: { cookie } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['x-upstream'], 'yes', 'upstream response headers come back');
  t.notOk(res.headers['proxy-authenticate'], 'hop-by-hop response headers are dropped');
  await res.body.text();
  const seen = upstream.last();
  t.equal(seen.url, '/app/page?q=1');
  t.has(seen.headers, DEFAULT_IDENTITY);
  t.equal(seen.headers['cookie'], 'app_pref=dark', 'the gateway session cookie stays at the edge');
  t.equal(seen.headers['host'], new URL(upstream.url).host);

  const jwks = (await (await request(`${gw.url}/_gate/jwks`)).body.json()) as { keys: [] };
  const { payload } = await jwtVerify(seen.headers['x-auth-assertion'] as string, createLocalJWKSet(jwks), {
    issuer: gw.url,
    audience: upstream.url,
  });
  t.match(payload, { sub: 'user-1', principal_type: 'human', assurance: 'passkey' });
  t.ok(payload.exp! - payload.iat! <= 300);

  const unverified = await gw.sessionCookie({ emailVerified: false });
  await (await request(`${gw.url}/x`, { headers: { cookie: unverified } })).body.text();
  t.notOk(upstream.last().headers['x-auth-email'], 'an unverified email is never sent');
});

t.test('routes to several upstreams by path prefix, each assertion addressed to its own app', async (t) => {
  const main = await startUpstream(t);
  const reports = await startUpstream(t);
  const gw = await startTestGateway(t, {
    upstream: main.url,
    policy: OPEN,
    overrides: { upstreams: [{ path: '/reports', url: reports.url }] },
  });
  const cookie = await gw.sessionCookie();
  const jwks = createLocalJWKSet((await (await request(`${gw.url}/_gate/jwks`)).body.json()) as { keys: [] });
  for (const [path, app, other] of [
    ['/reports/q3?x=1', reports, main],
    ['/reportsx', main, reports],
    ['/', main, reports],
  ] as const) {
    const before = other.seen.length;
    const res = await request(`${gw.url}${path}`, { headers: { cookie } });
    t.equal(res.statusCode, 200, path);
    await res.body.text();
    t.equal(app.last().url, path, `${path} reaches its app with the path unchanged`);
    t.equal(other.seen.length, before, `${path} does not reach the other app`);
    await jwtVerify(app.last().headers['x-auth-assertion'] as string, jwks, { issuer: gw.url, audience: app.url });
  }
});

t.test('spoofed identity headers in every spelling never reach the upstream', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = await gw.sessionCookie();
  const spoofs = [
    'X-Auth-Subject: evil',
    'x-auth-subject: evil',
    'X-AUTH-SUBJECT: evil',
    'X_Auth_Subject: evil',
    'x.auth.subject: evil',
    'X-Auth_Subject: evil',
    'X-Auth-Principal-Type: agent',
    'X_Auth_Principal_Type: agent',
    'X-Auth-Assurance: sensitive',
    'x_auth.assurance: sensitive',
    'X-Auth-Email: evil@example.test',
    'X.Auth.Email: evil@example.test',
    'X-Auth-Assertion: forged',
    'X_AUTH_ASSERTION: forged',
    'X-Auth-Groups: admin',
  ];
  for (const [path, withCookie] of [
    ['/page', true],
    ['/public/page', false],
  ] as const) {
    const text = [
      `GET ${path} HTTP/1.1`,
      'Host: localhost',
      'Connection: close',
      ...(withCookie ? [`Cookie: ${cookie}`] : []),
      ...spoofs,
      '',
      '',
    ].join('\r\n');
    const response = await rawHttp(gw.url, text);
    t.match(response, /^HTTP\/1\.1 200/, path);
    const seen = upstream.last();
    const names = seen.rawHeaders.filter((_, i) => i % 2 === 0);
    const identity = names.filter((name) => /^x[-_.]auth[-_.]/i.test(name));
    if (withCookie) {
      t.same(
        identity.sort(),
        ['x-auth-assertion', 'x-auth-assurance', 'x-auth-email', 'x-auth-principal-type', 'x-auth-subject'],
        "only the gateway's own, once each",
      );
      t.equal(seen.headers['x-auth-subject'], 'user-1');
      t.equal(seen.headers['x-auth-assurance'], 'passkey');
    } else {
      t.same(identity, [], 'a public route passes no identity at all');
    }
    t.notOk(
      seen.rawHeaders.some(
        (value) => value === 'evil' || value === 'forged' || value === 'sensitive' || value === 'evil@example.test',
      ),
      'no spoofed value arrives',
    );
  }
});

t.test("hop-by-hop headers and the headers Connection names are dropped, never the gateway's", async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = await gw.sessionCookie();
  const text = [
    'GET /p HTTP/1.1',
    'Host: localhost',
    `Cookie: ${cookie}`,
    'Connection: close, X-Secret-Hop, X-Auth-Subject, X-Forwarded-For',
    'X-Secret-Hop: 1',
    'Keep-Alive: timeout=5',
    'TE: trailers',
    'Proxy-Authorization: Basic eA==',
    'Trailer: x',
    '',
    '',
  ].join('\r\n');
  t.match(await rawHttp(gw.url, text), /^HTTP\/1\.1 200/);
  const seen = upstream.last().headers;
  for (const name of ['x-secret-hop', 'keep-alive', 'te', 'proxy-authorization', 'trailer'])
    t.notOk(name in seen, name);
  t.equal(seen['x-auth-subject'], 'user-1', "naming an identity header in Connection does not remove the gateway's");
  t.equal(seen['x-forwarded-for'], '127.0.0.1');
});

t.test("the control plane's cookies never reach the upstream, the app's own do", async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = `${await gw.sessionCookie()}; kp_session=cp-session; kp_device=cp-device; __Host-kp_session=cp; __Secure-kp_device=cp; KP_Other=x; app=1; theme=dark`;
  await (await request(`${gw.url}/p`, { headers: { cookie } })).body.text();
  t.equal(upstream.last().headers['cookie'], 'app=1; theme=dark');
});

t.test('forwarded headers are believed only from trusted proxies', async (t) => {
  const upstream = await startUpstream(t);
  const trusted = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = await trusted.sessionCookie();
  const spoof = {
    cookie,
    'x-forwarded-for': '203.0.113.9',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'app.example.test',
    'x-forwarded-prefix': '/admin',
    forwarded: 'for=1.2.3.4',
    'x-real-ip': '1.2.3.4',
  };
  await (await request(`${trusted.url}/p`, { headers: spoof })).body.text();
  let seen = upstream.last().headers;
  t.equal(seen['x-forwarded-for'], '203.0.113.9, 127.0.0.1', "a trusted proxy's chain is kept and extended");
  t.equal(seen['x-forwarded-proto'], 'https');
  t.equal(seen['x-forwarded-host'], 'app.example.test');

  const untrusted = await startTestGateway(t, {
    upstream: upstream.url,
    policy: OPEN,
    overrides: { trustedProxies: ['10.0.0.0/8'] },
  });
  const cookie2 = await untrusted.sessionCookie();
  await (await request(`${untrusted.url}/p`, { headers: { ...spoof, cookie: cookie2 } })).body.text();
  seen = upstream.last().headers;
  t.equal(seen['x-forwarded-for'], '127.0.0.1', 'rebuilt from the connection');
  t.equal(seen['x-forwarded-proto'], 'http');
  t.equal(seen['x-forwarded-host'], new URL(untrusted.url).host);
  await (await request(`${untrusted.url}/p`, { headers: { cookie: cookie2, host: 'evil.example' } })).body.text();
  t.equal(
    upstream.last().headers['x-forwarded-host'],
    new URL(untrusted.url).host,
    "the client's Host never becomes X-Forwarded-Host",
  );
  const https = await startTestGateway(t, {
    upstream: upstream.url,
    policy: OPEN,
    overrides: { trustedProxies: ['10.0.0.0/8'], publicUrl: 'https://gate.example.test' },
  });
  const cookie3 = (await https.sessionCookie()).replace(/kp_gate_/g, '__Host-kp_gate_');
  await rawHttp(
    https.local,
    ['GET /p HTTP/1.1', 'Host: evil.example', 'Connection: close', `Cookie: ${cookie3}`, '', ''].join('\r\n'),
  );
  t.equal(upstream.last().headers['x-forwarded-host'], 'gate.example.test', 'host and proto from the public URL');
  t.equal(upstream.last().headers['x-forwarded-proto'], 'https');
  for (const name of ['x-forwarded-prefix', 'forwarded', 'x-real-ip'])
    t.notOk(name in seen, `${name} from an untrusted client is dropped`);
  await rawHttp(
    untrusted.url,
    [
      'GET /p HTTP/1.1',
      'Host: localhost',
      'Connection: close',
      `Cookie: ${cookie2}`,
      'X_Forwarded_For: 6.6.6.6',
      'X.Forwarded.Host: evil',
      '',
      '',
    ].join('\r\n'),
  );
  t.notOk(
    upstream.last().rawHeaders.some((value) => value === '6.6.6.6' || value === 'evil'),
    'variant spellings are dropped too',
  );
});

t.test('streams request and response bodies, SSE unbuffered', async (t) => {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const upstream = await startUpstream(t, (req, res) => {
    if (req.url !== '/events') return false;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('data: first\n\n');
    void released.then(() => res.end('data: second\n\n'));
    return true;
  });
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = await gw.sessionCookie();
  const res = await request(`${gw.url}/events`, { headers: { cookie, accept: 'text/event-stream' } });
  t.equal(res.headers['content-type'], 'text/event-stream');
  const chunks: string[] = [];
  for await (const chunk of res.body) {
    chunks.push(String(chunk));
    // The second event is only written once the first has arrived here: a buffering proxy would hang.
    if (chunks.length === 1) release();
  }
  t.equal(chunks.join(''), 'data: first\n\ndata: second\n\n');

  const body = 'x'.repeat(200_000);
  const echoed = await request(`${gw.url}/upload`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'text/plain' },
    body,
  });
  t.equal(((await echoed.body.json()) as { body: string }).body.length, body.length);
  t.equal(upstream.last().method, 'POST');
});

t.test('a WebSocket upgrade passes through with identity; refused without a session', async (t) => {
  const upstream = await startUpgradingUpstream(t, { echo: true });
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = await gw.sessionCookie();
  const { port } = new URL(gw.url);
  const headers = {
    connection: 'Upgrade',
    upgrade: 'websocket',
    'sec-websocket-version': '13',
    'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
    'x-auth-subject': 'evil',
  };
  const req = httpRequest({ host: '127.0.0.1', port, path: '/socket', headers: { ...headers, cookie } });
  req.end();
  const [res, socket] = (await once(req, 'upgrade')) as [unknown, import('node:net').Socket];
  t.ok(res);
  socket.write('hello through the gate');
  const [echo] = (await once(socket, 'data')) as [Buffer];
  t.equal(String(echo), 'hello through the gate');
  socket.destroy();
  t.equal(upstream.last().headers['x-auth-subject'], 'user-1');
  t.ok(upstream.last().headers['x-auth-assertion']);

  const anonymous = httpRequest({ host: '127.0.0.1', port, path: '/socket', headers });
  anonymous.end();
  const [refused] = (await once(anonymous, 'response')) as [import('node:http').IncomingMessage];
  t.equal(refused.statusCode, 401);
  let body = '';
  for await (const chunk of refused) body += chunk;
  t.match(
    JSON.parse(body),
    { ok: false, reason: 'unauthorized' },
    'a refused upgrade is the same envelope, written on the socket',
  );
  t.equal(upstream.seen.length, 1, 'and never reaches the app');
});

t.test(
  'in observe mode an upgrade the policy would refuse passes without identity and is counted as observed',
  async (t) => {
    const upstream = await startUpgradingUpstream(t);
    const gw = await startTestGateway(t, { upstream: upstream.url, policy: { ...OPEN, mode: 'observe' } });
    const answer = await rawHttp(
      gw.url,
      'GET /socket HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Auth-Subject: evil\r\n\r\n',
    );
    t.match(answer, /^HTTP\/1\.1 101 /);
    t.notOk(upstream.last().headers['x-auth-subject'], "no identity, and not the client's");
    const metrics = await (await request(`${gw.url}/metrics`)).body.text();
    t.match(metrics, /kp_gate_requests_total\{outcome="observed"\} 1/);
    t.match(metrics, /kp_gate_observed_refusals_total\{reason="unauthorized"\} 1/);
    t.notMatch(metrics, /kp_gate_requests_total\{outcome="allowed"\}/);
  },
);

t.test('upstream failures become envelopes: down 502, silent 504; they are never counted as allowed', async (t) => {
  const down = await startTestGateway(t, { upstream: 'http://127.0.0.1:9', policy: OPEN });
  const cookie = await down.sessionCookie();
  const res = await request(`${down.url}/x`, { headers: { cookie } });
  t.equal(res.statusCode, 502);
  t.match(await res.body.json(), { ok: false, reason: 'upstream_unavailable' });

  const silent = await startUpstream(t, () => true);
  const slow = await startTestGateway(t, { upstream: silent.url, policy: OPEN, overrides: { upstreamTimeout: 1 } });
  const res2 = await request(`${slow.url}/x`, { headers: { cookie: await slow.sessionCookie() } });
  t.equal(res2.statusCode, 504);
  t.match(await res2.body.json(), { ok: false, reason: 'upstream_timeout' });
  for (const [gw, reason] of [
    [down, 'upstream_unavailable'],
    [slow, 'upstream_timeout'],
  ] as const) {
    const metrics = await (await request(`${gw.url}/metrics`)).body.text();
    t.notMatch(metrics, /kp_gate_requests_total\{outcome="allowed"\}/, `${reason}: not allowed`);
    t.match(metrics, /kp_gate_requests_total\{outcome="upstream_failed"\} 1/);
    t.match(metrics, new RegExp(`kp_gate_upstream_failures_total\\{reason="${reason}"\\} 1`));
  }
  const jws = await down.running.gateway.evidence();
  t.match(
    JSON.parse(Buffer.from(jws.split('.')[1]!, 'base64url').toString()),
    { counts: { allowed: 0 } },
    'evidence counts no failure as allowed',
  );
});

t.test('a request that arrives while the gateway is closing its upstream pool is a 503 to retry', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  const cookie = await gw.sessionCookie();
  await gw.running.gateway.close();
  const res = await request(`${gw.url}/x`, { headers: { cookie } });
  t.equal(res.statusCode, 503);
  t.match(await res.body.json(), { ok: false, reason: 'upstream_busy' });
  t.equal(upstream.seen.length, 0);
});

t.test('paths that could read differently upstream are refused', async (t) => {
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  for (const path of ['/public/%2e%2e/admin', '/public/..;/admin', '/public%2fadmin', '/public/%5cadmin']) {
    const res = await rawHttp(gw.url, `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    t.match(res, /^HTTP\/1\.1 400/, path);
    t.match(res, /"reason":"invalid_path"/);
  }
  t.equal(upstream.seen.length, 0);
  const ok = await request(`${gw.url}/%70ublic/x`);
  t.equal(ok.statusCode, 200, 'an encoded unreserved character reads as itself for policy and upstream alike');
  await ok.body.text();
  t.equal(upstream.last().url, '/public/x');
});

t.test('the signed config survives a restart; /metrics counts', async (t) => {
  const upstream = await startUpstream(t);
  const first = await startTestGateway(t, { upstream: upstream.url, policy: OPEN });
  await (await request(`${first.url}/x`)).body.text();
  const metrics = await (await request(`${first.url}/metrics`)).body.text();
  t.match(metrics, /kp_gate_requests_total\{outcome="refused"\} 1/);
  t.match(metrics, /kp_gate_refusals_total\{reason="unauthorized"\} 1/);
  t.match(metrics, /kp_gate_config_version 1/);
  await first.running.close();
  const second = await startTestGateway(t, { upstream: upstream.url, dataDir: first.dataDir });
  t.match(
    await (await request(`${second.url}/readyz`)).body.json(),
    { ok: true, configVersion: 1 },
    'the last good copy is back',
  );
});
