import t from 'tap';
import { fail } from '#lib/errors/keyplane-error.js';
import { rateLimited } from '#lib/errors/rate-limited.js';
import { build } from '../../helpers/build.js';

// docs/errors.md#one-error-path: a page route's refusal is a page for a browser and the envelope for
// everyone else, both drawn by the errors plugin with the failure's status and headers.
t.test('a page route refuses a browser with a page and a script with the envelope', async (t) => {
  const { app } = await build(t, { skipReady: true });
  app.get('/test/page', { config: { errorPage: true } }, async () => {
    throw rateLimited(2_500, 'too many tries on the test page');
  });
  app.post(
    '/test/form',
    {
      config: {
        errorPage: (request, failure) => `form again: ${failure.reason} ${(request.body as { name?: string }).name}`,
      },
    },
    async () => {
      throw fail('invalid_request', 'the name is wrong');
    },
  );
  app.get(
    '/test/broken-page',
    {
      config: {
        errorPage: () => {
          throw new Error('secret page detail');
        },
      },
    },
    async () => {
      throw new Error('secret internal detail');
    },
  );
  app.get('/test/api', async () => {
    throw fail('forbidden', 'not for you');
  });
  await app.ready();

  const page = await app.inject({ method: 'GET', url: '/test/page', headers: { accept: 'text/html' } });
  t.equal(page.statusCode, 429);
  t.match(page.headers['content-type'], /^text\/html/);
  t.equal(page.headers['retry-after'], '3', 'the failure headers go out on the page too');
  t.match(page.body, /data-reason="rate_limited"/);
  t.match(page.body, /too many tries on the test page/);
  t.match(String(page.headers['content-security-policy']), /nonce-/, 'the page CSP admits its own nonce');

  const json = await app.inject({ method: 'GET', url: '/test/page', headers: { accept: 'application/json' } });
  t.equal(json.statusCode, 429);
  t.same(json.json(), { ok: false, reason: 'rate_limited', message: 'too many tries on the test page' });
  t.equal(json.headers['retry-after'], '3');

  const form = await app.inject({
    method: 'POST',
    url: '/test/form',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    payload: 'name=ada',
  });
  t.equal(form.statusCode, 400);
  t.equal(form.body, 'form again: invalid_request ada', "the route's own page, with the person's input");
  const sent = await app.inject({ method: 'POST', url: '/test/form', payload: { name: 'ada' } });
  t.equal(sent.json().reason, 'invalid_request', 'a JSON body gets the envelope');

  const broken = await app.inject({ method: 'GET', url: '/test/broken-page', headers: { accept: 'text/html' } });
  t.equal(broken.statusCode, 500);
  t.match(broken.body, /data-reason="internal"/, 'a page that cannot be drawn falls back to the shared one');
  t.notMatch(broken.body, /secret/);

  const api = await app.inject({ method: 'GET', url: '/test/api', headers: { accept: 'text/html' } });
  t.same(
    api.json(),
    { ok: false, reason: 'forbidden', message: 'not for you' },
    'a route that is no page: the envelope',
  );
});

t.test('rateLimited rounds Retry-After up to whole seconds, never 0', async (t) => {
  t.equal(rateLimited(0, 'x').headers['retry-after'], '1');
  t.equal(rateLimited(1_001, 'x').headers['retry-after'], '2');
  t.equal(rateLimited(60_000, 'x', { fields: { error: 'slow_down' } }).fields.error, 'slow_down');
  t.equal(rateLimited(1, 'x').status, 429);
});
