import t from 'tap';
import { build } from '../../helpers/build.js';

/**
 * The page context (plugins/page-context.ts: session cookie, page language) lives only in the
 * encapsulated contexts of the areas that serve a browser. The probe: a malformed session cookie
 * (the session hook clears it) and `?lang=fr` (the locale hook remembers it in `kp_lang`). A page
 * answers both with Set-Cookie; a machine endpoint, which runs neither hook, with none. A hook
 * registered app-wide again would make every machine endpoint below fail.
 */
const PROBE_COOKIE = 'kp_session=not-a-well-formed-token';

/** `route` where it differs from `url`: the pattern whose existence the test checks. */
const MACHINE_ENDPOINTS: Array<{ method: 'GET' | 'POST'; url: string; route?: string }> = [
  { method: 'GET', url: '/healthz' },
  { method: 'GET', url: '/readyz' },
  { method: 'GET', url: '/metrics' },
  { method: 'GET', url: '/.well-known/openid-configuration' },
  { method: 'GET', url: '/.well-known/oauth-authorization-server' },
  { method: 'GET', url: '/.well-known/jwks.json' },
  { method: 'POST', url: '/auth/token' },
  { method: 'GET', url: '/auth/userinfo' },
  { method: 'POST', url: '/auth/introspect' },
  { method: 'POST', url: '/auth/revoke' },
  { method: 'GET', url: `/receipts/${'0'.repeat(64)}`, route: '/receipts/:hash' },
  { method: 'GET', url: '/receipts/checkpoints/latest' },
  { method: 'GET', url: '/gateway/config' },
  { method: 'POST', url: '/gateway/evidence' },
  { method: 'POST', url: '/mcp' },
  { method: 'GET', url: '/mcp/tools' },
];

t.test('machine endpoints run no session or locale hook; pages do', async (t) => {
  const { app } = await build(t);
  const page = await app.inject({ method: 'GET', url: '/auth?lang=fr', headers: { cookie: PROBE_COOKIE } });
  const pageCookies = [page.headers['set-cookie'] ?? []].flat().join('\n');
  t.match(pageCookies, /kp_session=;/, 'a page clears a malformed session cookie (the probe works)');
  t.match(pageCookies, /kp_lang=fr/, 'a page remembers the chosen language (the probe works)');

  for (const { method, url, route } of MACHINE_ENDPOINTS) {
    t.ok(app.hasRoute({ method, url: route ?? url }), `${method} ${url} exists`);
    const res = await app.inject({
      method,
      url: `${url}${url.includes('?') ? '&' : '?'}lang=fr`,
      headers: { cookie: PROBE_COOKIE, 'content-type': 'application/json' },
      ...(method === 'POST' ? { payload: '{}' } : {}),
    });
    t.equal(res.headers['set-cookie'], undefined, `${method} ${url} sets no cookie`);
    t.notMatch(String(res.headers['content-security-policy']), /nonce-/, `${method} ${url} needs no CSP nonce`);
  }
});

t.test('the app-wide context carries no cookie parser: cookies are read in the page context only', async (t) => {
  const { app } = await build(t);
  t.equal(app.hasRequestDecorator('cookies'), false);
  t.equal(app.hasReplyDecorator('setCookie'), false);
});

t.test('a page still gets its nonce CSP and the session; an unknown path answers the JSON envelope', async (t) => {
  const { app } = await build(t);
  const page = await app.inject({ method: 'GET', url: '/auth' });
  t.match(String(page.headers['content-security-policy']), /'nonce-[^']+'.*frame-ancestors 'none'/);
  const missing = await app.inject({ method: 'GET', url: '/no-such-page', headers: { cookie: PROBE_COOKIE } });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().reason, 'not_found');
  t.equal(missing.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
});

t.test('a machine endpoint runs two hooks, the response headers and the metrics, and no onRequest hook', async (t) => {
  const { app } = await build(t);
  const routes = app.printRoutes({ includeHooks: true, commonPrefix: false }).split('\n');
  const start = routes.findIndex(
    (line) => line.includes('/healthz (GET)') && routes[routes.indexOf(line) + 1]?.includes('•'),
  );
  const hooks = [];
  for (let i = start + 1; routes[i]?.includes('•'); i++) hooks.push(routes[i]!.replace(/^[│\s]*• /, ''));
  t.same(hooks, ['(onSend) ["anonymous()"]', '(onResponse) ["anonymous()"]']);
  const res = await app.inject({ method: 'GET', url: '/healthz' });
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'the request id is echoed all the same');
  t.equal(res.headers['x-content-type-options'], 'nosniff');
});

t.test('unknown paths share one metrics series, so a scanner cannot add series', async (t) => {
  const { app } = await build(t);
  for (const url of ['/wp-admin', '/.env', '/wp-admin?x=1']) await app.inject({ method: 'GET', url });
  const metrics = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  t.match(metrics, 'keyplane_http_requests_total{method="GET",route="unmatched",status="404"} 3\n');
  t.notMatch(metrics, 'wp-admin');
  t.notMatch(metrics, '.env');
});
