import t from 'tap';
import { createServer } from 'node:net';
import type { Page } from 'playwright-core';
import { DependencyUnavailableError } from '#lib/errors/dependency-outage.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

/**
 * docs/errors.md#one-error-path in Chromium: a refusal on the account, org, rollout and /device
 * pages (and a plain form post on the org page, without JavaScript) is a page in the person's
 * language under the page CSP, with the status of the envelope a script gets for the same request.
 */
const skip = chromiumSkip(t, 'browser refusal pages suite');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** What a refusal page shows: its reason, its language and the CSP it came with. */
async function shown(page: Page, url: string) {
  const response = await page.goto(url);
  return {
    status: response?.status(),
    csp: response?.headers()['content-security-policy'] ?? '',
    type: response?.headers()['content-type'] ?? '',
    reason: await page.locator('code[data-reason]').getAttribute('data-reason'),
    lang: await page.locator('html').getAttribute('lang'),
  };
}

t.test('refusals on the account, org, rollout and device pages are pages', { skip, timeout: 90_000 }, async (t) => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const { app, services, signIn } = await buildSignedIn(t, { config: { issuer: base } });
  await app.listen({ port, host: '127.0.0.1' });
  const { browser } = await signIn({ username: 'ada' });
  const created = await browser.post('/auth/orgs/create', { name: 'Acme' }, { origin: base });
  t.equal(created.statusCode, 200, created.body);

  const {
    browser: chromium,
    context,
    page,
  } = await launchChromium(t, {
    expectedFailures: ['/device', '/org/nope', '/projects/app_nope/profile', '/account', '/org/acme/websites/add'],
  });
  const cookies = [...browser.cookies].map(([name, value]) => ({ name, value, url: base }));
  await context.addCookies(cookies);
  await context.setExtraHTTPHeaders({ 'accept-language': 'de' });

  const cases = [
    ['/device?user_code=' + 'A'.repeat(40), 400, 'invalid_request', 'the code field is too long'],
    ['/org/nope', 404, 'not_found', 'an org that does not exist'],
    ['/projects/app_nope/profile', 404, 'not_found', 'the rollout slice of an unknown client'],
  ] as const;
  for (const [url, status, reason, why] of cases) {
    const seen = await shown(page, base + url);
    t.match(seen, { status, reason, lang: 'de', type: /^text\/html/, csp: /script-src 'nonce-/ }, why);
    // The same request from a script: the envelope, with the same status.
    const json = await browser.get(url, { accept: 'application/json' });
    t.equal(json.statusCode, status, `${url}: JSON`);
    t.match(json.json(), { ok: false, reason }, `${url}: the envelope`);
  }
  t.equal(await page.locator('#user-code').count(), 0, 'the last page was the shared one');
  await page.goto(`${base}/device?user_code=${'B'.repeat(40)}`);
  t.equal(await page.inputValue('#user-code'), 'B'.repeat(32), 'the device form again, with the typed code');

  // The database goes away while /account is drawn.
  const aliases = services.storage.identities.aliases;
  services.storage.identities.aliases = async () => {
    throw new DependencyUnavailableError('postgres', 'refused', 'connect ECONNREFUSED');
  };
  t.match(await shown(page, `${base}/account`), { status: 503, reason: 'unavailable', lang: 'de' });
  t.equal((await browser.get('/account', { accept: 'application/json' })).json().reason, 'unavailable');
  services.storage.identities.aliases = aliases;

  // Without JavaScript the org page's forms post as plain forms: a refusal is the page again.
  const plain = await chromium.newContext({ javaScriptEnabled: false, extraHTTPHeaders: { 'accept-language': 'de' } });
  t.teardown(() => plain.close());
  await plain.addCookies(cookies);
  const noScript = await plain.newPage();
  await noScript.goto(`${base}/org/acme`);
  await noScript.fill('#site-url', 'https://10.1.2.3/');
  const [posted] = await Promise.all([
    noScript.waitForResponse((r) => r.url().endsWith('/org/acme/websites/add')),
    noScript.click('button[data-action="add-site"]'),
  ]);
  t.equal(posted.status(), 400);
  t.equal(await noScript.locator('code[data-reason]').getAttribute('data-reason'), 'invalid_site_url');
  t.equal(await noScript.inputValue('#site-url'), 'https://10.1.2.3/', 'what was typed is kept');
  t.equal(await noScript.locator('html').getAttribute('lang'), 'de');
});
