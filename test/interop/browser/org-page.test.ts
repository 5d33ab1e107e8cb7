import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/** The org page in Chromium: a full-width URL field, an invite that says it was sent, pending invites listed. */
declare function getComputedStyle(node: unknown): { width: string; paddingTop: string };

const skip = chromiumSkip(t, 'browser org page suite');

t.test('the org page styles its URL field and confirms an invite', { skip, timeout: 120_000 }, async (t) => {
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
  const { page, problems, addAuthenticator } = await launchChromium(t);
  await addAuthenticator();
  await page.goto(`${server.url}/auth`);
  await page.fill('input[name="username"]', 'ada');
  await page.click('button[data-action="signup"]');
  await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });

  // Bob signs up in another browser, so that there is someone to invite.
  const other = await launchChromium(t);
  await other.addAuthenticator();
  await other.page.goto(`${server.url}/auth`);
  await other.page.fill('input[name="username"]', 'bob');
  await other.page.click('button[data-action="signup"]');
  await other.page.waitForURL(`${server.url}/account`, { timeout: 20_000 });

  await page.fill('#org-name', 'Acme');
  await page.click('button[data-action="create-org"]');
  await page.waitForURL(`${server.url}/org/acme`, { timeout: 20_000 });
  const url = page.locator('#site-url');
  const style = await url.evaluate((node) => getComputedStyle(node));
  t.not(style.paddingTop, '1px', `a styled field: padding ${style.paddingTop}`);
  const width = await url.evaluate((node) => (node as { offsetWidth: number }).offsetWidth);
  t.ok(width > 300, `as wide as the other fields: ${width}px`);

  await page.fill('#invite-username', 'bob');
  await page.click('form[action="/org/acme/members/invite"] button[type="submit"]');
  await page.waitForFunction(
    () => /Invited bob as member/.test(document.getElementById('form-status')?.textContent ?? ''),
    undefined,
    {
      timeout: 10_000,
    },
  );
  t.pass('the invite says it was sent');
  t.match(await page.textContent('#pending-invites'), /bob · member \(not accepted yet\)/, 'listed as pending at once');
  await page.reload();
  t.match(await page.textContent('#pending-invites'), /bob · member/, 'and after a reload');
  await other.page.reload();
  t.equal(await other.page.locator('[data-invite="acme"]').count(), 1, 'bob sees the invite on his account page');
  await other.page.click('button[data-action="accept-invite"]');
  await other.page.waitForURL(/\/account$/, { timeout: 10_000 }).catch(() => undefined);
  await page.reload();
  t.match(await page.textContent('#pending-invites'), /None/, 'an accepted invite is no longer pending');
  t.same(problems, [], 'no page errors and no CSP violations');
});
declare const document: { getElementById(id: string): { textContent: string | null } | null };
