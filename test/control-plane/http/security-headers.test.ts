import t from 'tap';
import { build } from '../../helpers/build.js';

t.test('HTML pages get a strict nonce CSP and never frame', async (t) => {
  const { app } = await build(t);
  const res = await app.inject({ method: 'GET', url: '/auth' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^text\/html/);
  const csp = String(res.headers['content-security-policy']);
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
  t.ok(nonce, 'a nonce is in the policy');
  t.match(csp, /default-src 'none'/);
  t.match(csp, /frame-ancestors 'none'/);
  t.match(csp, /base-uri 'none'/);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/);
  t.equal(res.headers['x-frame-options'], 'DENY');
  t.equal(res.headers['x-content-type-options'], 'nosniff');
  t.equal(res.headers['referrer-policy'], 'no-referrer');
  t.equal(res.headers['cache-control'], 'no-store');
  const scriptsAndStyles = res.body.match(/<(script|style)\b[^>]*>/g) ?? [];
  t.ok(scriptsAndStyles.length > 0);
  for (const tag of scriptsAndStyles)
    t.match(tag, new RegExp(`nonce="${nonce!.replace(/[+/=]/g, '\\$&')}"`), `${tag} carries the nonce`);
  t.notMatch(res.body, /\son[a-z]+=/i, 'no inline event handlers');
  const again = await app.inject({ method: 'GET', url: '/auth' });
  t.not(
    /'nonce-([^']+)'/.exec(String(again.headers['content-security-policy']))?.[1],
    nonce,
    'a fresh nonce per response',
  );
});

t.test('JSON responses and failures carry the headers too; no HSTS on http', async (t) => {
  const { app } = await build(t);
  for (const url of ['/healthz', '/does-not-exist']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'; base-uri 'none'", url);
    t.equal(res.headers['x-frame-options'], 'DENY');
    t.equal(res.headers['strict-transport-security'], undefined);
    t.ok(res.headers['x-request-id'], 'request id echoed');
    t.equal(res.headers['access-control-allow-origin'], undefined, 'CORS closed');
  }
});

t.test('HSTS when the issuer is https', async (t) => {
  const { app } = await build(t, { config: { issuer: 'https://id.example.com' } });
  const res = await app.inject({ method: 'GET', url: '/healthz' });
  t.match(res.headers['strict-transport-security'], /max-age=\d+/);
});

t.test('a CORS preflight gets no allowance', async (t) => {
  const { app } = await build(t);
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/.well-known/openid-configuration',
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
  });
  t.equal(res.headers['access-control-allow-origin'], undefined);
  t.equal(res.json().ok, false);
});

t.test('forwarded headers are believed only from trusted proxies', async (t) => {
  const { app } = await build(t, { skipReady: true, config: { 'http.trustedProxies': ['10.1.2.3'] } });
  app.get('/test/ip', async (request) => ({ ok: true, ip: request.ip, protocol: request.protocol }));
  await app.ready();
  const trusted = await app.inject({
    method: 'GET',
    url: '/test/ip',
    remoteAddress: '10.1.2.3',
    headers: { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' },
  });
  t.same(trusted.json(), { ok: true, ip: '203.0.113.9', protocol: 'https' });
  const untrusted = await app.inject({
    method: 'GET',
    url: '/test/ip',
    remoteAddress: '198.51.100.7',
    headers: { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' },
  });
  t.same(untrusted.json(), { ok: true, ip: '198.51.100.7', protocol: 'http' });

  const headers = { 'x-request-id': 'lb-7f3a' };
  const fromProxy = await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '10.1.2.3', headers });
  t.equal(fromProxy.headers['x-request-id'], 'lb-7f3a', "a trusted proxy's request id is kept");
  const fromClient = await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '198.51.100.7', headers });
  t.not(fromClient.headers['x-request-id'], 'lb-7f3a', "a client's is replaced");
});

t.test('logs never carry credentials', async (t) => {
  const { app, logs } = await build(t);
  await app.inject({
    method: 'GET',
    url: '/auth?token=SECRET_TOKEN_VALUE&code=SECRET_CODE&keep=visible',
    headers: { authorization: 'Bearer SECRET_BEARER', cookie: 'kp_session=SECRET_COOKIE', dpop: 'SECRET_DPOP' },
  });
  const text = logs.join('');
  t.match(text, /keep=visible/, 'the request was logged');
  const access = logs.map(
    (line) => JSON.parse(line) as { msg: string; req?: { url: string }; res?: { statusCode: number } },
  );
  t.same(
    access.filter((line) => line.req !== undefined).map((line) => [line.msg, typeof line.res?.statusCode]),
    [['request completed', 'number']],
    'one access-log line per request, written when it completes',
  );
  for (const secret of ['SECRET_TOKEN_VALUE', 'SECRET_CODE', 'SECRET_BEARER', 'SECRET_COOKIE', 'SECRET_DPOP'])
    t.notMatch(text, secret);
});

// A page whose form posts back with the session says `same-origin` in its header and its meta tag
// (route config `sameOriginReferrer`); every other page and answer keeps `no-referrer`.
t.test('pages that post back with the session get a same-origin referrer policy, the rest no-referrer', async (t) => {
  const { app } = await build(t);
  const policyOf = async (url: string) => {
    const res = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
    return {
      header: res.headers['referrer-policy'],
      meta: /<meta name="referrer" content="([^"]+)">/.exec(res.body)?.[1],
    };
  };
  t.same(await policyOf('/auth/logout'), { header: 'same-origin', meta: 'same-origin' }, 'the logout confirmation');
  t.same(await policyOf('/auth'), { header: 'no-referrer', meta: 'no-referrer' }, 'the sign-in page');
  t.same(await policyOf('/healthz'), { header: 'no-referrer', meta: undefined }, 'a machine endpoint');
});
