import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * Real browser, real passkeys: Debian's Chromium driven by playwright-core, with the CDP WebAuthn
 * virtual authenticator (a CTAP2 platform authenticator that holds discoverable credentials and
 * verifies the user), against a control plane listening on a free port.
 */
const skip = chromiumSkip(t, 'browser passkey suite');

t.test(
  'sign up, land on /account, sign out, sign in usernameless, add a passkey, step up',
  { skip, timeout: 90_000 },
  async (t) => {
    const config = loadControlPlaneConfig({
      env: {},
      overrides: { dataDir: tempDir(t), host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn' },
    });
    const logs: string[] = [];
    const server: RunningControlPlane = await startControlPlane(config, {
      logStream: new Writable({
        write(chunk, _e, done) {
          logs.push(String(chunk));
          done();
        },
      }),
    });
    t.teardown(() => server.close());
    t.match(server.url, /^http:\/\/localhost:\d+$/, 'loopback issuer is localhost (a valid RP ID)');

    const { page, cdp, problems, addAuthenticator } = await launchChromium(t);
    const first = await addAuthenticator();
    const status = page.locator('#status');

    // sign up
    await page.goto(`${server.url}/auth`);
    await page.fill('input[name="username"]', 'Ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(async (error) => {
      throw new Error(
        `no /account after sign-up: status "${await status.textContent()}", ${problems.join('; ')}; ${error}`,
      );
    });
    t.equal(await page.locator('[data-field="username"]').textContent(), 'ada', '/account shows the username');
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId: first });
    t.equal(credentials.length, 1, 'the authenticator holds one passkey');
    t.equal(credentials[0]!.isResidentCredential, true, 'a discoverable credential');

    // sign out
    await page.click('button[data-action="signout"]');
    // The sign-in page, saying what happened (`/auth?done=signed-out`).
    await page.waitForURL((url) => url.origin === server.url && url.pathname === '/auth', { timeout: 10_000 });
    t.equal(new URL(page.url()).searchParams.get('done'), 'signed-out');
    const signedOut = await page.goto(`${server.url}/account`);
    t.equal(new URL(signedOut!.url()).pathname, '/auth', 'signed out: /account sends to /auth');

    // sign in usernameless
    await page.fill('input[name="username"]', '');
    await page.click('button[data-action="signin"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(async (error) => {
      throw new Error(
        `no /account after sign-in: status "${await status.textContent()}", ${problems.join('; ')}; ${error}`,
      );
    });
    t.equal(await page.locator('[data-field="username"]').textContent(), 'ada', 'signed in without typing a username');

    // add a second passkey on another authenticator (the first is excluded: it holds a passkey of this
    // account already; Chrome allows one internal authenticator at a time, so the first goes away)
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId: first });
    const second = await addAuthenticator();
    await page.click('button[data-action="add-passkey"]');
    await page
      .locator('tr[data-cred-id]')
      .nth(1)
      .waitFor({ timeout: 20_000 })
      .catch(async (error) => {
        throw new Error(
          `second passkey not listed: status "${await status.textContent()}", ${problems.join('; ')}; ${error}`,
        );
      });
    t.pass('two passkeys are listed');
    const onSecond = await cdp.send('WebAuthn.getCredentials', { authenticatorId: second });
    t.equal(onSecond.credentials.length, 1, 'the new passkey lives on the second authenticator');

    // step up with the new passkey
    await page.goto(`${server.url}/auth/step-up?return=/account`);
    await page.click('button[data-action="step-up"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(async (error) => {
      throw new Error(
        `step-up did not return: status "${await status.textContent()}", ${problems.join('; ')}; ${error}`,
      );
    });
    t.equal(
      await page.locator('[data-field="assurance"]').textContent(),
      'sensitive',
      'the session is sensitive after the step-up',
    );

    const account = await page.evaluate(async () => (await fetch('/account?format=json')).json());
    t.match(account, { ok: true, username: 'ada', passkeys: [{ label: 'Passkey 1' }, { label: 'Passkey 2' }] });
    t.same(problems, [], 'no page errors, failed loads or CSP violations');
  },
);
