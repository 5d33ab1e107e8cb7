import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * The account page's answers as a person meets them in Debian's Chromium (issue 33 item 14): a
 * step-up page that asks for no code an account does not have, backup codes whose count follows
 * the new codes, an added address listed while it waits for confirmation, a "Delete my account"
 * that looks dangerous, and a message after signing out and after deleting the account.
 */
declare function getComputedStyle(node: unknown): { backgroundColor: string };

const skip = chromiumSkip(t, 'browser account pages suite');

t.test(
  'account page answers: step-up, backup codes, pending address, delete, sign-out',
  { skip, timeout: 150_000 },
  async (t) => {
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
    page.on('dialog', (dialog) => void dialog.accept());
    await addAuthenticator();
    const signUp = async (username: string) => {
      await page.goto(`${server.url}/auth`);
      await page.fill('input[name="username"]', username);
      await page.click('button[data-action="signup"]');
      await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });
    };
    await signUp('ada');

    // An account without TOTP is not asked for an authenticator code.
    await page.goto(`${server.url}/auth/step-up?return=/account`);
    t.equal(await page.locator('#totp-code').count(), 0, 'no code field without TOTP');
    t.notMatch(await page.textContent('main'), /authenticator/i);
    await page.click('button[data-action="step-up"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });
    t.equal(await page.locator('[data-field="assurance"]').textContent(), 'sensitive');

    // New backup codes: the count above them follows.
    t.match(await page.textContent('#recovery-count'), /No backup codes yet/);
    await page.click('button[data-sf-action="recovery-regenerate"]');
    await page.waitForSelector('#recovery-panel:not([hidden])', { timeout: 10_000 });
    t.equal(await page.textContent('#recovery-count'), '10 unused backup codes.');
    await page.reload();
    t.match(await page.textContent('#recovery-count'), /^10 unused backup codes\./, 'and says the same after a reload');

    // An added address is listed at once, waiting for confirmation, and after a reload.
    t.match(await page.textContent('#emails-h'), /none yet/);
    await page.fill('#email-new', 'ada@example.com');
    await page.click('form[data-sf-form="email-add"] button[type="submit"]');
    await page.waitForSelector('#email-list [data-email="ada@example.com"]', { timeout: 10_000 });
    t.match(await page.textContent('#email-list'), /ada@example\.com \(waiting for confirmation/);
    t.notMatch(await page.textContent('#emails-h'), /none/);
    await page.reload();
    t.match(await page.textContent('#email-list'), /ada@example\.com \(waiting for confirmation/);

    // "Delete my account" does not look like every harmless button.
    const colour = (selector: string) =>
      page.locator(selector).evaluate((node) => getComputedStyle(node).backgroundColor);
    const danger = await colour('button[data-action="delete-account"]');
    t.not(danger, await colour('button[data-action="add-passkey"]'), 'another colour than the ordinary buttons');
    t.match(danger, /^rgb\((1[5-9]\d|2\d\d), \d{1,2}, \d{1,2}\)$/, `red: ${danger}`);

    // Signing out says so.
    await page.click('button[data-action="signout"]');
    await page.waitForURL(`${server.url}/auth?done=signed-out`, { timeout: 20_000 });
    t.match(await page.textContent('[data-notice]'), /You are signed out/);

    // Deleting the account says what happened.
    await signUp('bob');
    await page.goto(`${server.url}/auth/step-up?return=/account`);
    await page.click('button[data-action="step-up"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });
    await page.fill('#delete-confirm', 'bob');
    await page.click('button[data-action="delete-account"]');
    await page.waitForURL(`${server.url}/auth?done=account-deleted`, { timeout: 20_000 });
    t.match(await page.textContent('[data-notice]'), /Your account was deleted/);
    t.same(problems, [], 'no page errors and no CSP violations');
  },
);
