import t from 'tap';
import type { IncomingMessage } from 'node:http';
import { requestScope } from '../../gateway/src/request-scope.js';

const requestWith = (cookie?: string) => ({ headers: cookie === undefined ? {} : { cookie } }) as IncomingMessage;

t.test("a request's cookies are parsed once and read by every concern from the same scope", async (t) => {
  const req = requestWith('kp_gate=a.b; kp_lang=de; kp_gate=older');
  const scope = requestScope(req);
  t.equal(requestScope(req), scope, 'the same scope for the rest of the request');
  t.same(scope.cookies, { kp_gate: 'a.b', kp_lang: 'de' }, 'the first occurrence of a name wins');
  t.equal(scope.cookieHeader, 'kp_gate=a.b; kp_lang=de; kp_gate=older');
  t.ok(Object.isFrozen(scope.cookies), 'no concern can change what the others read');
  t.not(requestScope(requestWith('kp_lang=fr')), scope, 'another request has its own');
});

t.test('a request without cookies has an empty scope', async (t) => {
  t.same(requestScope(requestWith()), { cookieHeader: undefined, cookies: {} });
});
