import t from 'tap';
import { redactUrl, requestIdFor } from '#lib/logging/request-log.js';

t.test('redactUrl cuts the values of credential parameters and keeps the rest', async (t) => {
  t.equal(redactUrl('/healthz'), '/healthz', 'a URL without parameters is returned as it is');
  t.equal(
    redactUrl('/cb?code=abc&state=xyz&iss=https%3A%2F%2Fkp'),
    '/cb?code=[redacted]&state=[redacted]&iss=https%3A%2F%2Fkp',
  );
  t.equal(redactUrl('/a?TOKEN=1#frag'), '/a?TOKEN=[redacted]#frag', 'names match in any case; the fragment stays');
  t.equal(redactUrl('/odd&refresh_token=x'), '/odd&refresh_token=[redacted]', 'an & without a ? is still cut');
  t.equal(redactUrl('/a?codes=1&xcode=2'), '/a?codes=1&xcode=2', 'only whole parameter names');
});

t.test("requestIdFor believes a trusted proxy's id of safe characters, and makes one otherwise", async (t) => {
  t.equal(requestIdFor('lb-7f3a', true), 'lb-7f3a');
  t.match(requestIdFor('lb-7f3a', false), /^[0-9a-f-]{36}$/);
  t.match(requestIdFor('has space', true), /^[0-9a-f-]{36}$/);
  t.match(requestIdFor(['a', 'b'], true), /^[0-9a-f-]{36}$/);
  t.match(requestIdFor(undefined, true), /^[0-9a-f-]{36}$/);
});
