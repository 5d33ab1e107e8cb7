import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { LIVE_ADMIN, startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * The consent page names an API's scopes in words (docs/apis.md#consent): an org admin declares
 * the org's API with descriptions in two languages, the org's app asks for one of its scopes, and
 * a person reading German sees the German words marked as the org's, then approves and lands at
 * the app with a code whose token carries the scope. The operator's API does not admit the org's app.
 */
const skip = chromiumSkip(t, 'API scopes consent suite');

t.test(
  'the consent page shows API scope descriptions in the person language, marked as the org words',
  { skip },
  async (t) => {
    const server = await startLiveControlPlane(t);
    const base = server.url;
    const { page, problems, addAuthenticator } = await launchChromium(t, { expectedFailures: ['/callback'] });
    await addAuthenticator();
    await page.setExtraHTTPHeaders({ 'accept-language': 'de' });

    await page.goto(`${base}/auth`);
    await page.fill('input[name="username"]', 'scope-reader');
    await page.click('button[data-action="signup"]');
    await page.waitForURL((url) => url.pathname === '/account', { timeout: 20_000 });

    // What the org admin does from the account's pages, as JSON from the same origin.
    const call = (path: string, body: unknown) =>
      page.evaluate(
        async ([path, body]) => {
          const res = await fetch(path as string, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json' },
            body: JSON.stringify(body),
          });
          return { status: res.status, body: (await res.json()) as Record<string, any> };
        },
        [path, body] as const,
      );
    const org = await call('/auth/orgs/create', { name: 'Acme Notes' });
    t.equal(org.status, 200, JSON.stringify(org.body));
    const slug = org.body.slug as string;
    const site = await call(`/org/${slug}/websites/add`, { url: 'https://acme-notes.example' });
    t.equal(site.status, 200, JSON.stringify(site.body));
    // The domain proof itself (DNS TXT or the well-known file) is tested in the orgs suites.
    await server.services.storage.orgs.markSiteVerified(site.body.siteId, Date.now());

    const refused = await call(`/org/${slug}/apis`, {
      resource: 'https://elsewhere.example/api',
      name: 'Elsewhere',
      scopes: [{ name: 'x', description: 'x' }],
    });
    t.match(refused, { status: 400, body: { reason: 'invalid_target' } }, 'only under a domain the org proved');

    const api = await call(`/org/${slug}/apis`, {
      resource: 'https://api.acme-notes.example',
      name: 'Notes API',
      scopes: [{ name: 'notes.read', description: { en: 'Read your notes', de: 'Ihre Notizen lesen' } }],
    });
    t.equal(api.status, 201, JSON.stringify(api.body));
    const operatorApi = await fetch(`${base}/admin/apis`, {
      method: 'POST',
      headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        resource: 'https://tasks.example',
        name: 'Tasks',
        scopes: [{ name: 'tasks.read', description: { de: 'Ihre Aufgaben lesen' } }],
      }),
    });
    t.equal(operatorApi.status, 201);

    const callback = `${base.replace('localhost', '127.0.0.1')}/callback`;
    const app = await call('/register', {
      client_name: 'Acme Notes App',
      org: slug,
      redirect_uris: [callback],
      token_endpoint_auth_method: 'none',
      scope: 'openid',
    });
    t.equal(app.status, 201, JSON.stringify(app.body));

    const verifier = randomBytes(32).toString('base64url');
    const authorize = (resource: string, scope: string) =>
      `${base}/auth/authorize?${new URLSearchParams({
        client_id: app.body.client_id,
        redirect_uri: callback,
        response_type: 'code',
        scope,
        resource,
        state: 'st',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      })}`;

    await page.goto(authorize('https://api.acme-notes.example', 'openid notes.read'));
    await page.waitForSelector('form[data-action="continue"]');
    t.equal(await page.textContent('[data-scope="notes.read"]'), 'Ihre Notizen lesen', 'in German');
    t.match(
      await page.textContent('[data-field="scope_author"]'),
      /so beschreibt es Acme Notes/,
      "marked as the org's",
    );
    t.match(await page.textContent('[data-field="resources"]'), /api\.acme-notes\.example/);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(callback), { timeout: 20_000 }),
      page.click('form[data-action="continue"] button[value="allow"]'),
    ]);
    const code = new URL(page.url()).searchParams.get('code');
    t.ok(code, problems.join(' | '));
    const token = await fetch(`${base}/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: callback,
        client_id: app.body.client_id,
        code_verifier: verifier,
      }),
    });
    t.match(await token.json(), { scope: 'openid notes.read' });

    // The operator's API does not admit an org's app by default: its resource is refused at once.
    await page.goto(authorize('https://tasks.example', 'openid tasks.read'));
    t.equal(new URL(page.url()).searchParams.get('error'), 'invalid_target', "another owner's API is not offered");
  },
);
