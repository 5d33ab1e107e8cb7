import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { PLATFORM_AUTHENTICATOR, chromiumSkip, launchChromium, withoutAutofill } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * The account page names sessions and devices as a person knows them: the browser and system from
 * the User-Agent (bowser), when each was first and last seen, and which one is this device. Two
 * Chromium contexts share one passkey (copied between CDP virtual authenticators); the second
 * claims to be Safari on an iPhone.
 */
const IPHONE_SAFARI =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1';

const skip = chromiumSkip(t, 'browser account devices suite');

t.test(
  'sessions and devices show browser and system, first and last seen, and this device',
  { skip, timeout: 120_000 },
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

    const { browser, page, cdp, problems, addAuthenticator } = await launchChromium(t);
    const authenticatorId = await addAuthenticator();
    await page.goto(`${server.url}/auth`);
    await page.fill('input[name="username"]', 'ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });

    // The same passkey on "an iPhone": a second context with Safari's User-Agent.
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    const phone = await browser.newContext({ userAgent: IPHONE_SAFARI });
    await withoutAutofill(phone);
    const phonePage = await phone.newPage();
    const phoneCdp = await phone.newCDPSession(phonePage);
    await phoneCdp.send('WebAuthn.enable', { enableUI: false });
    const { authenticatorId: phoneAuthenticator } = await phoneCdp.send('WebAuthn.addVirtualAuthenticator', {
      options: PLATFORM_AUTHENTICATOR,
    });
    for (const credential of credentials)
      await phoneCdp.send('WebAuthn.addCredential', { authenticatorId: phoneAuthenticator, credential });
    await phonePage.goto(`${server.url}/auth`);
    await phonePage.fill('input[name="username"]', 'ada');
    await phonePage.click('button[data-action="signin"]');
    await phonePage.waitForURL(`${server.url}/account`, { timeout: 20_000 });

    await page.reload();
    const sessions = page.locator('table[aria-labelledby="sessions-h"] tbody tr');
    t.equal(await sessions.count(), 2);
    const rows = await sessions.allTextContents();
    const chrome = rows.find((row) => /Chrome \d+ on Linux/.test(row));
    const safari = rows.find((row) => /Safari 17 on iOS/.test(row));
    t.ok(chrome, `the desktop session is named: ${rows.join(' | ')}`);
    t.ok(safari, 'the phone session is named');
    t.match(chrome, /this session/);
    t.notMatch(safari, /this session|this device/);
    t.notMatch(rows.join(' '), /ses_|dev_/, 'no identifiers a person cannot read');
    t.match(
      await sessions.first().locator('time').first().getAttribute('datetime'),
      /^\d{4}-\d\d-\d\dT/,
      'times carry the exact instant',
    );

    const devices = await page.locator('table[aria-labelledby="devices-h"] tbody tr').allTextContents();
    t.equal(devices.length, 2);
    t.match(
      devices.find((row) => /Chrome/.test(row)),
      /this device/,
    );
    t.notMatch(
      devices.find((row) => /Safari/.test(row)),
      /this device/,
    );

    const fromPhone = await phonePage.locator('table[aria-labelledby="devices-h"] tbody tr').allTextContents();
    t.match(
      fromPhone.find((row) => /Safari 17 on iOS/.test(row)),
      /this device/,
      'each browser sees itself',
    );

    const json = await page.evaluate(
      async () => (await (await fetch('/account?format=json')).json()) as Record<string, unknown>,
    );
    t.match((json['account'] as Record<string, unknown> | undefined)?.['sessions'] ?? json['sessions'], [
      { label: /on Linux|on iOS/, browser: /Chrome|Safari/, os: /Linux|iOS/ },
      { label: /on Linux|on iOS/ },
    ]);
    t.same(problems, [], 'no page errors and no CSP violations');
  },
);
