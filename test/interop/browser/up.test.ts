import t from 'tap';
import type { Page } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir } from '../../helpers/build.js';
import { startCli } from '../../helpers/cli.js';

/**
 * What `npm start` promises a newcomer (docs/cli.md#keyplane-up): `keyplane up` runs the
 * control plane, a gateway and the demo app; a browser with a passkey opens the gateway, is sent
 * through sign-up at the control plane, lands on the page it asked for with the identity the
 * gateway vouches for, is stepped up for /admin, and signs out. Everything runs as the CLI runs it.
 */
const skip = chromiumSkip(t, 'npm start browser suite');

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The control plane shows its one-tap form the first time an account meets a client; later it is remembered. */
async function allowIfAsked(page: Page): Promise<void> {
  const form = page.locator('form[data-action="continue"] button[value="allow"]');
  if (await form.count()) await form.click();
}

t.test(
  'keyplane up: a passkey in the browser reaches the demo app through the gateway',
  { skip, timeout: 120_000 },
  async (t) => {
    const up = await startCli(
      ['up', '--port', '0', '--gateway-port', '0', '--demo-port', '0', '--data', tempDir(t)],
      {},
      60_000,
    );
    t.teardown(() => up.stop());
    const [controlPlane, gateway, demo] = await waitFor('three listening lines', async () => {
      const urls = [...up.stdout().matchAll(/^listening (\S+)$/gm)].map((m) => m[1]!);
      return urls.length === 3 ? urls : undefined;
    });
    t.match(controlPlane, /^http:\/\/localhost:\d+$/);
    t.match(gateway, /^http:\/\/localhost:\d+$/);
    t.ok(
      await waitFor('where to open it', async () => (up.stderr().includes(`Open ${gateway}/`) ? true : undefined)),
      'says where to open it',
    );
    await waitFor('the gateway to hold its signed config', async () =>
      (await fetch(`${gateway}/readyz`)).status === 200 ? true : undefined,
    );

    const direct = (await (await fetch(`${demo}/`, { headers: { accept: 'application/json' } })).json()) as {
      identity: Record<string, string | undefined>;
      assertion: { verified: boolean };
    };
    t.same(direct.identity, {}, 'straight to the demo app: no identity');
    t.equal(direct.assertion.verified, false);

    const { context, page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    const why = () => `at ${page.url()}; ${problems.join('; ')}`;

    await t.test('anonymous → sign-up with a passkey → back on the original URL with identity headers', async (t) => {
      await page.goto(`${gateway}/reports/q3?view=full`);
      t.equal(new URL(page.url()).origin, controlPlane, 'sent to the control plane to sign in');
      await page.fill('input[name="username"]', 'newcomer');
      await page.click('button[data-action="signup"]');
      await page
        .waitForURL(
          (url) =>
            url.origin === gateway || url.pathname === '/auth/authorize' || url.pathname.startsWith('/auth/continue'),
          { timeout: 20_000 },
        )
        .catch((error) => {
          throw new Error(`sign-up went nowhere ${why()}; ${error}`);
        });
      await allowIfAsked(page);
      await page.waitForURL(`${gateway}/reports/q3?view=full`, { timeout: 20_000 }).catch((error) => {
        throw new Error(`not back at the original URL ${why()}; ${error}`);
      });
      t.equal(await page.textContent('#path'), '/reports/q3');
      t.match(await page.textContent('#x-auth-subject'), /^\S+$/, 'the demo app received a subject');
      t.equal(await page.textContent('#x-auth-principal-type'), 'human');
      t.equal(await page.textContent('#x-auth-assurance'), 'passkey');
      t.match(await page.getAttribute('#assertion', 'class'), 'good', 'the assertion verifies with /_gate/jwks');
    });

    await t.test('spoofed identity headers from the page never reach the app', async (t) => {
      // The demo page's CSP allows no fetch, so the browser's cookies are replayed from here.
      const cookie = (await context.cookies(gateway)).map((c) => `${c.name}=${c.value}`).join('; ');
      const res = await fetch(`${gateway}/api/whoami`, {
        headers: { cookie, 'X-Auth-Subject': 'root', X_Auth_Subject: 'root', 'X-Auth-Assurance': 'sensitive' },
      });
      t.equal(res.status, 200);
      const seen = (await res.json()) as { identity: Record<string, string> };
      t.not(seen.identity['x-auth-subject'], 'root');
      t.equal(seen.identity['x-auth-assurance'], 'passkey');
    });

    await t.test('a sensitive route sends the passkey session through step-up and back', async (t) => {
      await page.goto(`${gateway}/admin`);
      t.equal(new URL(page.url()).origin, controlPlane, 'sent to the control plane for a step-up');
      await page.click('button[data-action="step-up"]');
      await page
        .waitForURL((url) => url.origin === gateway || url.pathname.startsWith('/auth/continue'), { timeout: 20_000 })
        .catch((error) => {
          throw new Error(`step-up went nowhere ${why()}; ${error}`);
        });
      await allowIfAsked(page);
      await page.waitForURL(`${gateway}/admin`, { timeout: 20_000 }).catch((error) => {
        throw new Error(`not back at /admin ${why()}; ${error}`);
      });
      t.equal(await page.textContent('#x-auth-assurance'), 'sensitive');
    });

    await t.test('sign-out ends the gateway session and the control plane session', async (t) => {
      await page.goto(`${gateway}/_gate/signout`);
      // A GET only shows the confirmation form; its button posts the sign-out.
      await page.click('button[data-action="signout"]');
      // Back at the app, the page says the person is signed out, and offers to sign in again.
      await page.waitForSelector('a[data-action="sign-in-again"]', { timeout: 20_000 }).catch((error) => {
        throw new Error(`no signed-out page after sign-out ${why()}; ${error}`);
      });
      t.equal(new URL(page.url()).origin, new URL(gateway!).origin, 'on the gateway, back at the app');
      t.match(await page.textContent('main'), /You are signed out of/);
      await page.click('a[data-action="sign-in-again"]');
      await page
        .waitForURL((url) => url.origin === controlPlane && url.pathname === '/auth', { timeout: 20_000 })
        .catch((error) => {
          throw new Error(`not at the sign-in page after "Sign in again" ${why()}; ${error}`);
        });
      const after = await fetch(`${gateway}/api/whoami`, { headers: { accept: 'application/json' } });
      t.equal(after.status, 401, 'no cookie, no entry');
      await page.goto(`${gateway}/public`);
      t.equal(await page.textContent('#x-auth-subject'), 'not sent', 'a public route passes with no identity');
    });

    t.same(problems, [], 'no page errors, failed loads or CSP violations');
    t.equal(await up.stop(), 0, 'SIGTERM drains all three and exits 0');
  },
);
