import t from 'tap';
import { build } from '../../helpers/build.js';
import { FAVICON_SVG } from '#lib/html/favicon.js';

t.test('the control plane serves its icon at /favicon.svg and /favicon.ico, and pages link it', async (t) => {
  const { app } = await build(t);
  for (const url of ['/favicon.svg', '/favicon.ico']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, url);
    t.match(res.headers['content-type'], /^image\/svg\+xml/, `${url} is SVG`);
    t.equal(res.headers['cache-control'], 'public, max-age=86400', `${url} may be cached`);
    t.equal(res.body, FAVICON_SVG);
    t.notMatch(res.body, /<script|on[a-z]+=/i, `${url} carries no script`);
  }
  const page = await app.inject({ method: 'GET', url: '/auth', headers: { accept: 'text/html' } });
  t.match(page.body, '<link rel="icon" href="/favicon.svg" type="image/svg+xml">');
  t.match(page.headers['content-security-policy'], /img-src 'self'/, 'the page CSP lets the icon load');
});
