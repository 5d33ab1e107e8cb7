import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';

/**
 * The org dashboard driven in Chromium (plain forms, no script of ours), then the seal rendered
 * by Chromium on a page of the registered site, linking to the verification page.
 */
const skip = chromiumSkip(t, 'browser org and seal suite');
const tls = makeTestCa(t);

t.test(
  'create an org, add, scan and prove a site in the dashboard; the seal shows on the site',
  { skip, timeout: 120_000 },
  async (t) => {
    const config = loadControlPlaneConfig({
      env: {},
      overrides: {
        dataDir: tempDir(t),
        host: '127.0.0.1',
        port: 0,
        masterKey: TEST_MASTER_KEY,
        logLevel: 'warn',
        'fetch.allowPrivateTargets': true,
        'fetch.caFile': tls.caFile,
        'scan.rescanIntervalHours': 0,
      },
    });
    const server: RunningControlPlane = await startControlPlane(config, {
      logStream: new Writable({
        write(_chunk, _e, done) {
          done();
        },
      }),
    });
    t.teardown(() => server.close());

    let token = 'unset';
    const site = await startHttpsServer(t, tls, (req, res) => {
      if (req.url === '/.well-known/keyplane-site.txt') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`keyplane-site=${token}\n`);
        return;
      }
      if (req.url !== '/') {
        res.writeHead(404);
        res.end();
        return;
      }
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        // The site lets the seal in: the issuer in script-src and connect-src, nothing else.
        'content-security-policy': `default-src 'none'; script-src ${server.url}; connect-src ${server.url}; frame-ancestors 'none'`,
        'x-content-type-options': 'nosniff',
        'strict-transport-security': 'max-age=31536000',
        'referrer-policy': 'no-referrer',
      });
      res.end(
        `<!doctype html><html lang="en"><title>Shop</title><h1>Shop</h1><footer><script src="${server.url}/embed/seal.js" async></script></footer></html>`,
      );
    });

    const { browser, page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    await page.goto(`${server.url}/auth`);
    await page.fill('input[name="username"]', 'ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });

    await page.fill('#org-name', 'Ada Shop');
    await page.click('button[data-action="create-org"]');
    await page.waitForURL(`${server.url}/org/ada-shop`, { timeout: 10_000 }).catch(async (error) => {
      throw new Error(
        `no dashboard after creating the org: at ${page.url()}: ${(await page.content()).slice(0, 400)}; ${problems.join('; ')}; ${error}`,
      );
    });
    t.equal(
      await page.locator('[data-field="role"]').textContent(),
      'owner',
      'the dashboard shows the creator as owner',
    );

    await page.fill('#site-url', `${site.origin}/`);
    await page.click('button[data-action="add-site"]');
    const row = page.locator('tr[data-site]');
    await row.first().waitFor({ timeout: 20_000 });
    t.equal(await row.count(), 1, 'the site is listed');
    t.match(await row.textContent(), /primary/);

    await page.click('button[data-action="scan"]');
    await page
      .locator('tr[data-site] [data-field="grade"]')
      .filter({ hasText: /^[A-F][+-]?$/ })
      .waitFor({ timeout: 20_000 })
      .catch(() => undefined);
    const grade = await page.locator('tr[data-site] [data-field="grade"]').textContent();
    t.match(grade, /^[A-F][+-]?$/, 'the dashboard shows the grade');

    const view = (await page.evaluate(async () => (await fetch('/org/ada-shop?format=json')).json())) as {
      sites: Array<{ siteId: string; proof: { wellKnown: { value: string } } }>;
    };
    token = view.sites[0]!.proof.wellKnown.value.replace('keyplane-site=', '');
    await page.click('tr[data-site] button:has-text("Check domain")');
    // The page reloads after the check; its URL does not change, so wait for the row itself.
    await page
      .locator('tr[data-site]')
      .filter({ hasNotText: 'not verified' })
      .waitFor({ timeout: 20_000 })
      .catch(() => undefined);
    t.match(await row.textContent(), /verified/);
    t.notMatch(await row.textContent(), /not verified/);

    // The registered site's own page, in a fresh context (no Keyplane cookies) trusting nothing special
    // but the test certificate.
    const visitor = await browser.newContext({ ignoreHTTPSErrors: true });
    const shop = await visitor.newPage();
    const requests: string[] = [];
    shop.on('request', (r) => requests.push(r.url()));
    const cookieHeaders: Array<string | undefined> = [];
    shop.on('request', (r) => {
      if (r.url().startsWith(server.url)) cookieHeaders.push(r.headers()['cookie']);
    });
    await shop.goto(`${site.origin}/`);
    const seal = shop.locator('[data-keyplane-seal="current"]');
    await seal.waitFor({ timeout: 10_000 });
    t.equal(await seal.getAttribute('data-grade'), grade, 'the seal shows the current grade');
    t.ok(
      requests.every((u) => u.startsWith(site.origin) || u.startsWith(server.url)),
      'no third-party requests',
    );
    t.ok(
      cookieHeaders.every((c) => c === undefined),
      'no cookies go with the seal',
    );
    const [verification] = await Promise.all([visitor.waitForEvent('page'), seal.click()]);
    await verification.waitForLoadState();
    t.equal(
      new URL(verification.url()).pathname,
      `/verify/${view.sites[0]!.siteId}`,
      'the seal links to the verification page',
    );
    t.equal(await verification.locator('[data-field="status"]').textContent(), 'current');
    t.equal(await verification.locator('[data-field="grade"]').textContent(), grade);
    t.same(problems, [], 'no page errors, failed loads or CSP violations in the dashboard');
  },
);
