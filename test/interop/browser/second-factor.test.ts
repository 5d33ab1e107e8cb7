import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { generateTotpCode } from '#lib/totp/totp.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';
import { linkIn, readOutbox } from '../../helpers/smtp.js';

/**
 * The /account page's TOTP, backup-code and e-mail sections in Debian's Chromium, on an account
 * signed up with a CDP virtual authenticator: turn TOTP on, step up with passkey + TOTP, make
 * backup codes, add and verify an address, sign in with a magic link, turn TOTP off.
 */
// The few DOM names the page functions below use (they run in the browser, typed for tsc here).
interface DomNode {
  id: string;
  textContent: string | null;
}
declare const document: {
  getElementById(id: string): DomNode | null;
  querySelector(selector: string): DomNode | null;
  activeElement: DomNode | null;
};

const skip = chromiumSkip(t, 'browser TOTP/e-mail suite');

t.test(
  'TOTP on, step-up with TOTP, backup codes, e-mail verification, TOTP off, then a magic link',
  { skip, timeout: 120_000 },
  async (t) => {
    const dataDir = tempDir(t);
    const config = loadControlPlaneConfig({
      env: {},
      overrides: { dataDir, host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn' },
    });
    const server: RunningControlPlane = await startControlPlane(config, {
      logStream: new Writable({
        write(_c, _e, done) {
          done();
        },
      }),
    });
    t.teardown(() => server.close());

    // The refused disable (403) is expected.
    const { browser, context, page, problems, addAuthenticator } = await launchChromium(t, {
      expectedFailures: ['/auth/totp/disable'],
    });
    page.on('dialog', (dialog) => void dialog.accept());
    await addAuthenticator();
    const status = page.locator('#second-factor-status');
    const why = async () => `status "${await status.textContent().catch(() => '')}", ${problems.join('; ')}`;

    await page.goto(`${server.url}/auth`);
    await page.fill('input[name="username"]', 'ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });

    // TOTP setup: the QR code and the key appear; the current code turns it on.
    await page.click('button[data-sf-action="totp-setup"]');
    await page.waitForSelector('#totp-setup-panel:not([hidden])', { timeout: 10_000 }).catch(async (e) => {
      throw new Error(`${await why()}; ${e}`);
    });
    t.match(await page.getAttribute('#totp-qr', 'src'), /^data:image\/svg\+xml/, 'the QR code is shown');
    const secret = (await page.textContent('#totp-secret'))!.trim();
    t.match(secret, /^[A-Z2-7]{32}$/);
    t.equal(await page.evaluate(() => document.activeElement?.id), 'totp-code', 'focus moves to the code field');
    await page.fill('#totp-code', generateTotpCode(secret, Date.now()));
    await page.click('form[data-sf-form="totp-confirm"] button[type="submit"]');
    await page
      .waitForFunction(() => document.querySelector('[data-field="totp"]')?.textContent === 'active', undefined, {
        timeout: 10_000,
      })
      .catch(async (e) => {
        throw new Error(`TOTP not active: ${await why()}; ${e}`);
      });
    t.pass('TOTP is active');

    // Turning it off needs a fresh step-up: a plain passkey session is told so.
    await page.click('button[data-sf-action="totp-disable"]');
    await page
      .waitForFunction(
        () => /confirm it is you/i.test(document.getElementById('second-factor-status')?.textContent ?? ''),
        undefined,
        { timeout: 10_000 },
      )
      .catch(async (e) => {
        throw new Error(`no refusal shown: ${await why()}; ${e}`);
      });

    // Step-up now needs the code as well (the next step's code: the confirming step is spent).
    await page.goto(`${server.url}/auth/step-up?return=/account`);
    await page.fill('#totp-code', generateTotpCode(secret, Date.now() + 30_000));
    await page.click('button[data-action="step-up"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(async (e) => {
      throw new Error(`step-up: ${problems.join('; ')}; ${e}`);
    });
    t.equal(await page.locator('[data-field="assurance"]').textContent(), 'sensitive');

    // Backup codes, shown once.
    await page.click('button[data-sf-action="recovery-regenerate"]');
    await page.waitForSelector('#recovery-panel:not([hidden])', { timeout: 10_000 });
    const codes = await page.locator('#recovery-codes li').allTextContents();
    t.equal(codes.length, 10, 'ten codes are listed');

    /** Adds an address on the account page and returns the verification link mailed to it (the dev outbox). */
    const addAddress = async (address: string) => {
      await page.fill('#email-new', address);
      await page.click('form[data-sf-form="email-add"] button[type="submit"]');
      await page.waitForFunction(
        () => /sent a confirmation link/.test(document.getElementById('second-factor-status')?.textContent ?? ''),
        undefined,
        { timeout: 10_000 },
      );
      await server.services.mailer.idle();
      const to = new RegExp(`^To: ${address.replace(/\./g, '\\.')}\\r?$`, 'm');
      return linkIn(
        (await readOutbox(dataDir)).find((mail) => to.test(mail))!,
        '/auth/email/verify',
      )!;
    };

    // An address verified in this browser, which is signed in to the account that added it:
    // opening the link verifies, and changes no session.
    await page.goto(await addAddress('ada@example.com'));
    t.match(await page.textContent('h1'), /Address verified/);

    // A second address, its link opened in a browser without the account's session (another
    // device, or a mail scanner): the page only asks, and its button verifies.
    await page.goto(`${server.url}/account`);
    const second = await addAddress('ada2@example.com');
    const elsewhere = await (await browser.newContext()).newPage();
    await elsewhere.goto(second);
    t.match(await elsewhere.textContent('h1'), /Confirm your email address/, 'opening the link only asks');
    await Promise.all([
      elsewhere.waitForURL(`${server.url}/auth/email/verify`, { timeout: 10_000 }),
      elsewhere.click('form[data-action="verify-email"] button'),
    ]);
    t.match(await elsewhere.textContent('h1'), /Address verified/);

    // At `sensitive`, TOTP can be turned off.
    await page.goto(`${server.url}/account`);
    await page.click('button[data-sf-action="totp-disable"]');
    await page
      .waitForFunction(() => document.querySelector('[data-field="totp"]')?.textContent === 'off', undefined, {
        timeout: 10_000,
      })
      .catch(async (e) => {
        throw new Error(`TOTP not off: ${await why()}; ${e}`);
      });
    t.pass('TOTP is off');

    // A magic link asked for in this browser signs it in at `email`.
    await context.clearCookies({ name: 'kp_session' });
    const asked = await page.evaluate(
      async () =>
        (await (
          await fetch('/auth/magic/request', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ email: 'ada@example.com' }),
          })
        ).json()) as { ok: boolean },
    );
    t.equal(asked.ok, true);
    await server.services.mailer.idle();
    const magic = linkIn((await readOutbox(dataDir)).at(-1)!, '/auth/magic')!;
    await page.goto(magic);
    t.equal(new URL(page.url()).pathname, '/account');
    t.equal(await page.locator('[data-field="assurance"]').textContent(), 'email', 'signed in by the link at email');

    t.same(problems, [], 'no page errors and no CSP violations');
  },
);
