import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * The lines the pages' scripts show come in the page's language (docs/i18n.md "Refusals shown on
 * pages"): forms.js and common.js read them, keyed by reason, from the page's JSON block. The
 * refusals are the server's envelopes, fulfilled by the browser's request routing.
 */
const skip = chromiumSkip(t, 'browser script messages');

t.test("a refusal and a network failure are said in the page's language", { skip, timeout: 90_000 }, async (t) => {
  const config = loadControlPlaneConfig({
    env: {},
    overrides: { dataDir: tempDir(t), host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn' },
  });
  const server: RunningControlPlane = await startControlPlane(config, {
    logStream: new Writable({
      write(_c, _e, done) {
        done();
      },
    }),
  });
  t.teardown(() => server.close());
  const { page, context, addAuthenticator } = await launchChromium(t, {
    expectedFailures: ['/contact', '/auth/registration-options'],
  });
  let answer: 'rate_limited' | 'made_up_reason' | 'abort' = 'rate_limited';
  await page.route(`${server.url}/contact`, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    if (answer === 'abort') return route.abort('failed');
    return route.fulfill({
      status: 429,
      contentType: 'application/json',
      body: JSON.stringify({ ok: false, reason: answer, message: 'English message of the envelope' }),
    });
  });
  const send = async () => {
    await page.fill('#contact-email', 'ada@example.com');
    await page.fill('#contact-message', 'Hello');
    await page.click('button[data-action="contact"]');
  };
  const status = page.locator('#form-status');

  await page.goto(`${server.url}/contact?lang=ar`);
  await send();
  await t.resolves(
    status.filter({ hasText: 'محاولات كثيرة جدًا. انتظر دقيقة ثم حاول مرة أخرى.' }).waitFor({ timeout: 10_000 }),
  );
  t.equal(await page.getAttribute('#contact-email', 'aria-invalid'), 'true', 'the field is marked');

  await page.goto(`${server.url}/contact?lang=de`);
  answer = 'made_up_reason';
  await send();
  await t.resolves(
    status.filter({ hasText: 'Etwas ist schiefgelaufen. Bitte versuchen Sie es erneut.' }).waitFor({ timeout: 10_000 }),
  );
  answer = 'abort';
  await send();
  await t.resolves(
    status
      .filter({ hasText: 'Die Netzwerkverbindung ist fehlgeschlagen; versuchen Sie es erneut.' })
      .waitFor({ timeout: 10_000 }),
  );

  await page.goto(`${server.url}/contact?lang=en`);
  answer = 'rate_limited';
  await send();
  await t.resolves(
    status.filter({ hasText: 'English message of the envelope' }).waitFor({ timeout: 10_000 }),
    'an English page keeps the envelope’s own message',
  );

  await t.test('a taken username on the German sign-in page is said in German', async (t) => {
    await page.unroute(`${server.url}/contact`);
    await addAuthenticator();
    await page.goto(`${server.url}/auth?lang=de`);
    await page.waitForLoadState('load');
    await page.fill('input[name="username"]', 'greta');
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/account', { timeout: 30_000 }),
      page.click('button[data-action="signup"]'),
    ]);
    await context.clearCookies();
    await page.goto(`${server.url}/auth?lang=de`);
    await page.waitForLoadState('load');
    await page.fill('input[name="username"]', 'greta');
    await page.click('button[data-action="signup"]');
    await t.resolves(
      page
        .locator('#status')
        .filter({ hasText: 'Dieser Benutzername ist vergeben. Wählen Sie einen anderen.' })
        .waitFor({ timeout: 10_000 }),
    );
    t.equal(await page.getAttribute('input[name="username"]', 'aria-invalid'), 'true', 'the field is marked');
  });
});
