import t from 'tap';
import { fail } from '#lib/errors/keyplane-error.js';
import { rateLimited } from '#lib/errors/rate-limited.js';
import { DependencyUnavailableError } from '#lib/errors/dependency-outage.js';
import { build } from '../../helpers/build.js';
import { buildSignedIn } from '../../helpers/signed-in.js';
import { signUp } from '../../helpers/accounts.js';

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

/**
 * GET routes of the page context that may answer a browser's refusal with JSON, each with why. Empty:
 * a new page route gets the page without anyone remembering (plugins/page-context.ts).
 */
const NO_PAGE: Record<string, string> = {
  '/federation/x/jwks': "a connection's public key, read by its identity provider: JSON only",
  '/federation/x/saml/metadata': "a SAML connection's service provider metadata, read by its identity provider: XML",
};

/** GET routes that set `errorPage` themselves (true or their own page), so `*\u002F*` gets the page too. */
const OWN_PAGE: Record<string, string> = {
  '/auth/email/verify': 'a mailed link, opened by whatever the mail client uses',
  '/auth/magic': 'a mailed link, opened by whatever the mail client uses',
  '/auth/enrol': 'a mailed passkey enrolment link (SCIM provisioning), opened by whatever the mail client uses',
  '/auth/authorize': 'the OAuth front channel: a browser redirected by an app',
  '/auth/logout': 'the OIDC front channel: a browser redirected by an app',
  '/saml/sso': 'the SAML front channel: a browser redirected by a service provider',
  '/saml/slo': 'the SAML front channel: a browser redirected by a service provider',
  '/device': 'verification_uri(_complete), typed or followed from a device',
  '/federation/x/start': "the sign-in page's button for a connection: a browser's navigation",
  '/federation/x/callback': 'the OIDC front channel: a browser redirected back by an identity provider',
  '/federation/x/saml/slo': "the SAML front channel: a browser sent back by an identity provider's logout",
  '/federation/x/continue': 'the end of a SAML sign-in: a browser sent on by the ACS',
  '/federation/x/logged-out': "the OIDC front channel: a browser sent back by an identity provider's logout",
  '/scan': 'the scan page, HTML unless JSON is asked for: a refused URL shows its form again',
};
const ENVELOPE = {
  ok: false,
  reason: 'unavailable',
  message: 'the database (PostgreSQL) is unavailable; retry shortly',
};

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

t.test(
  'every GET route of the page context refuses a browser with a page and an API caller with the envelope',
  async (t) => {
    const { app, services, signIn } = await buildSignedIn(t);
    const { browser } = await signIn({ username: 'ada' });
    // The session store goes away: every route that reads the session cookie (the page context's,
    // and only theirs) now fails in its session hook, before its handler, with 503 `unavailable`.
    services.storage.sessions.findLive = async () => {
      throw new DependencyUnavailableError('postgres', 'refused', 'connect ECONNREFUSED');
    };
    const paths = Object.entries((app.swagger() as { paths: Record<string, Record<string, unknown>> }).paths)
      .filter(([, operations]) => 'get' in operations)
      .map(([path]) => path.replace(/\{[^}]*\}/g, 'x'));
    const pages: string[] = [];
    for (const path of paths) {
      const asBrowser = await browser.get(path, { accept: BROWSER_ACCEPT });
      if (asBrowser.statusCode !== 503) continue; // a machine endpoint: it reads no session cookie
      pages.push(path);
      const api = await browser.get(path, { accept: '*/*' });
      const script = await browser.get(path, { accept: 'application/json' });
      // A route that marks `errorPage` itself answers any non-JSON request with its page (a mailed
      // link, a protocol page); one with the page context's default only a request naming text/html.
      const callers =
        path in OWN_PAGE
          ? [['a script', script] as const]
          : ([
              ['an API caller', api],
              ['a script', script],
            ] as const);
      if (path in OWN_PAGE) t.match(api.headers['content-type'], /^text\/html/, `${path}: ${OWN_PAGE[path]}`);
      for (const [who, res] of callers) {
        t.equal(res.statusCode, 503, `${path}: ${who}`);
        t.match(res.headers['content-type'], /^application\/json/, `${path}: ${who} gets JSON`);
        // The envelope (FedCM's endpoints add their own fields to it).
        if (/^application\/json/.test(String(res.headers['content-type'])))
          t.match(res.json(), ENVELOPE, `${path}: ${who} gets the envelope`);
      }
      if (path in NO_PAGE) continue;
      t.match(asBrowser.headers['content-type'], /^text\/html/, `${path}: a browser gets a page`);
      // Own pages may say what to do next instead (a mailed link's page); the shared one names the reason.
      if (!(path in OWN_PAGE) || path === '/device')
        t.match(asBrowser.body, 'data-reason="unavailable"', `${path}: the page names the reason`);
      t.equal(asBrowser.headers['retry-after'], '5', `${path}: with the failure's headers`);
    }
    for (const page of ['/account', '/account/export', '/org/x', '/rollout', '/projects/x/profile', '/device'])
      t.ok(pages.includes(page), `${page} is in the page context`);
    t.same(
      Object.keys(NO_PAGE).filter((path) => !pages.includes(path)),
      [],
      'every exception is still a page-context route',
    );
  },
);

// docs/errors.md#one-error-path: /account and the plain forms on it answer a browser's refusal with
// a page; scripts and API callers keep the envelope byte for byte.
t.test("a browser's refusal on /account is a page; JSON callers keep the envelope", async (t) => {
  const { app, services } = await build(t, { areas: ['account', 'pages', 'assets', 'passkeys'] });
  const ada = await signUp(app, 'ada');
  const form = await app.inject({
    method: 'POST',
    url: '/account/approvals/revoke',
    headers: { ...ada.headers, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'party=app_nope',
  });
  t.equal(form.statusCode, 404);
  t.match(form.headers['content-type'], /^text\/html/);
  t.match(form.body, 'data-form="profile"', 'the account page again');
  t.match(form.body, '<code data-reason="not_found">');
  const script = await app.inject({
    method: 'POST',
    url: '/account/approvals/revoke',
    headers: { ...ada.headers, accept: 'application/json' },
    payload: { party: 'app_nope' },
  });
  t.equal(script.body, JSON.stringify({ ok: false, reason: 'not_found', message: 'no such approval' }));

  // The database goes away while the page is drawn.
  services.storage.identities.aliases = async () => {
    throw new DependencyUnavailableError('postgres', 'refused', 'connect ECONNREFUSED');
  };
  const page = await app.inject({
    method: 'GET',
    url: '/account?lang=fr',
    headers: { ...ada.headers, accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
  });
  t.equal(page.statusCode, 503);
  t.equal(page.headers['retry-after'], '5');
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.body, '<code data-reason="unavailable">');
  t.match(page.body, '<html lang="fr"');
  t.match(page.headers['content-security-policy'], /script-src 'nonce-/);
  const envelope = JSON.stringify({
    ok: false,
    reason: 'unavailable',
    message: 'the database (PostgreSQL) is unavailable; retry shortly',
  });
  for (const [url, accept] of [
    ['/account', 'application/json'],
    ['/account?format=json', 'text/html'],
    ['/account', '*/*'],
    ['/account/export', '*/*'],
  ] as const) {
    const json = await app.inject({ method: 'GET', url, headers: { ...ada.headers, accept } });
    t.equal(json.statusCode, 503, `${url} ${accept}`);
    t.equal(json.body, envelope, `${url} ${accept}: the envelope`);
  }
});

t.test('rateLimited rounds Retry-After up to whole seconds, never 0', async (t) => {
  t.equal(rateLimited(0, 'x').headers['retry-after'], '1');
  t.equal(rateLimited(1_001, 'x').headers['retry-after'], '2');
  t.equal(rateLimited(60_000, 'x', { fields: { error: 'slow_down' } }).fields.error, 'slow_down');
  t.equal(rateLimited(1, 'x').status, 429);
});
