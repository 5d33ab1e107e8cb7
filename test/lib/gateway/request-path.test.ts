import t from 'tap';
import { normalizeRequestTarget } from '../../../lib/gateway/request-path.js';

t.test('keeps ordinary targets and decodes unreserved escapes', async (t) => {
  t.same(normalizeRequestTarget('/a/b?x=1&y=/..'), { path: '/a/b', search: '?x=1&y=/..' }, 'the query is left alone');
  t.same(normalizeRequestTarget('/%61pi/%7euser'), { path: '/api/~user', search: '' });
  t.same(normalizeRequestTarget('/a%20b/%c3%a9'), { path: '/a%20b/%C3%A9', search: '' });
  t.same(normalizeRequestTarget('/'), { path: '/', search: '' });
  t.same(normalizeRequestTarget('/a..b/.well-known'), { path: '/a..b/.well-known', search: '' });
});

t.test('refuses targets that could read differently upstream', async (t) => {
  for (const target of ['', 'http://evil/x', '*', '/a/../b', '/a/./b', '/..', '/a/..;/b', '/a/.;x/b', '/a/%2e%2e/b', '/a/%2E/b', '/a%2fb', '/a%2Fb', '/a%5cb', '/a\\b', '/a%00b', '/a%zz', '/a%', '/a b', '/a\u0000b', undefined]) {
    t.equal(normalizeRequestTarget(target), null, encodeURI(String(target)));
  }
});
