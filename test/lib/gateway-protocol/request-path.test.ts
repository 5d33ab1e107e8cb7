import t from 'tap';
import { findRoute, normalizeRequestTarget } from '#lib/gateway-protocol/request-path.js';

t.test('keeps ordinary targets and decodes unreserved escapes', async (t) => {
  t.same(normalizeRequestTarget('/a/b?x=1&y=/..'), { path: '/a/b', search: '?x=1&y=/..' }, 'the query is left alone');
  t.same(normalizeRequestTarget('/%61pi/%7euser'), { path: '/api/~user', search: '' });
  t.same(normalizeRequestTarget('/a%20b/%c3%a9'), { path: '/a%20b/%C3%A9', search: '' });
  t.same(normalizeRequestTarget('/'), { path: '/', search: '' });
  t.same(normalizeRequestTarget('/a..b/.well-known'), { path: '/a..b/.well-known', search: '' });
});

t.test('refuses targets that could read differently upstream', async (t) => {
  for (const target of [
    '',
    'http://evil/x',
    '*',
    '/a/../b',
    '/a/./b',
    '/..',
    '/a/..;/b',
    '/a/.;x/b',
    '/a/%2e%2e/b',
    '/a/%2E/b',
    '/a%2fb',
    '/a%2Fb',
    '/a%5cb',
    '/a\\b',
    '/a%00b',
    '/a%zz',
    '/a%',
    '/a b',
    '/a\u0000b',
    undefined,
  ]) {
    t.equal(normalizeRequestTarget(target), null, encodeURI(String(target)));
  }
});

t.test('refuses every form a common upstream reads as another path', async (t) => {
  const table: Array<[string, string]> = [
    ['/admin;x', 'Tomcat, Jetty and Spring strip ;parameters: /admin'],
    ['/admin;jsessionid=1/users', 'a ;parameter inside the path'],
    ['/admin%3bx', 'an encoded ; (decoded before the parameters are split by some)'],
    ['/a/..;/admin', 'the ..; traversal'],
    ['/admin%2fusers', 'an encoded slash'],
    ['/admin%5Cusers', 'an encoded backslash'],
    ['/admin\\users', 'a backslash (IIS, ASP.NET read it as /)'],
    ['/x/%2e%2e/admin', 'encoded dot segments'],
    ['/x/%2E./admin', 'a half-encoded dot segment'],
    ['/x/../admin', 'a dot segment'],
    ['/x/./admin', 'a single-dot segment'],
    ['/admin%252fusers', 'a double-encoded slash'],
    ['/%252e%252e/admin', 'double-encoded dots'],
    ['/admin%c0%afusers', 'an overlong UTF-8 slash'],
    ['/%c0%ae%c0%ae/admin', 'overlong UTF-8 dots'],
    ['/admin%ff', 'invalid UTF-8'],
    ['/%ef%bc%a1dmin', 'a fullwidth A (NFKC folds it to A)'],
    ['/admin%ef%bc%8fusers', 'a fullwidth solidus'],
    ['/admin.', 'a trailing dot (IIS drops it)'],
    ['/admin%20', 'a trailing space (IIS drops it)'],
    ['/admin%09', 'an encoded tab'],
    ['/admin%0a', 'an encoded newline'],
    ['/admin%u002f', 'IIS %u escapes'],
    ['/admin%00.html', 'an encoded NUL'],
    ['/admin#x', 'a raw fragment'],
  ];
  for (const [target, why] of table) t.equal(normalizeRequestTarget(target), null, `${target}: ${why}`);
});

t.test('matches routes ignoring ASCII case and empty segments', async (t) => {
  const routes = [{ path: '/' }, { path: '/admin' }, { path: '/api/Admin' }];
  const table: Array<[string, string]> = [
    ['/Admin', '/admin'],
    ['/ADMIN/users', '/admin'],
    ['/aDmIn', '/admin'],
    ['//admin//users', '/admin'],
    ['/api/admin/x', '/api/Admin'],
    ['/API/ADMIN', '/api/Admin'],
    ['/administrator', '/'],
    ['/%61dmin', '/admin'],
  ];
  for (const [raw, expected] of table) {
    const target = normalizeRequestTarget(raw);
    t.ok(target, `${raw} is accepted`);
    t.equal(findRoute(routes, target!.path)?.path, expected, `${raw} falls under ${expected}`);
  }
});

t.test('a route list matched before and then changed in place is matched by its new paths', async (t) => {
  const routes = [{ path: '/admin' }, { path: '/' }];
  t.equal(findRoute(routes, '/Admin/users')?.path, '/admin');
  routes[0]!.path = '/billing';
  t.equal(findRoute(routes, '/admin/users')?.path, '/', 'the old prefix no longer matches');
  t.equal(findRoute(routes, '/billing')?.path, '/billing');
  routes.push({ path: '/admin' });
  t.equal(findRoute(routes, '/admin')?.path, '/admin', 'an added route counts');
});
