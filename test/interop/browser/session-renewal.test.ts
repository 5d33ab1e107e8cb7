import t from 'tap';
import { Writable } from 'node:stream';
import type { Page } from 'playwright-core';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * Session renewal in a real browser (docs/security.md#session-tokens): Chromium with the CDP
 * virtual authenticator signs up, signs in again and steps up; after each, the account page lists
 * ONE session (the same one), the browser holds a new cookie, and the cookie it held before is
 * refused when presented on its own.
 */
const skip = chromiumSkip(t, 'browser session renewal suite');

interface Row {
  identifier: string;
  assurance: string;
}

async function sessionRows(page: Page): Promise<Row[]> {
  return page.locator('table[aria-labelledby="sessions-h"] tbody tr').evaluateAll((rows) =>
    rows.map((row) => ({
      identifier: row.querySelector('[data-action="revoke-session"]')?.getAttribute('data-identifier') ?? '',
      // Browser, signed in, last active, assurance, actions.
      assurance: row.querySelectorAll('td')[3]?.textContent ?? '',
    })),
  );
}

t.test(
  'a sign-in and a step-up in Chromium renew the session: one session on the account page, the old cookie refused',
  { skip, timeout: 120_000 },
  async (t) => {
    const config = loadControlPlaneConfig({
      env: {},
      overrides: { dataDir: tempDir(t), host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn' },
    });
    const server = await startControlPlane(config, {
      logStream: new Writable({
        write(_chunk, _e, done) {
          done();
        },
      }),
    });
    t.teardown(() => server.close());
    const { context, page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    const status = page.locator('#status');
    const arrived = (what: string) => async (error: unknown) => {
      throw new Error(`${what}: status "${await status.textContent()}", ${problems.join('; ')}; ${error}`);
    };
    // kp_fedcm is scoped to /fedcm/, so it is read for a URL there.
    const cookie = async (name: string) =>
      (await context.cookies(`${server.url}/fedcm/`)).find((c) => c.name === name)?.value;
    /** The captured token alone, same-origin, as an attacker holding it would send it. */
    const presentAlone = async (token: string) => {
      const headers = { cookie: `kp_session=${token}`, origin: server.url, accept: 'application/json' };
      const read = await fetch(`${server.url}/account?format=json`, { headers });
      const regenerate = await fetch(`${server.url}/auth/recovery/regenerate`, { method: 'POST', headers });
      return [read.status, regenerate.status];
    };

    await page.goto(`${server.url}/auth`);
    await page.fill('input[name="username"]', 'ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(arrived('no /account after sign-up'));
    const [first] = await sessionRows(page);
    t.equal((await sessionRows(page)).length, 1);
    t.equal(first!.assurance, 'passkey');
    const signedUp = (await cookie('kp_session'))!;
    t.equal(await cookie('kp_fedcm'), signedUp, 'the FedCM cookie holds the same token');

    // A second sign-in in the same browser, usernameless, from the sign-in page.
    await page.goto(`${server.url}/auth`);
    await page.click('button[data-action="signin"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(arrived('no /account after sign-in'));
    const signedIn = (await cookie('kp_session'))!;
    t.not(signedIn, signedUp, 'the sign-in set a new session cookie');
    t.equal(await cookie('kp_fedcm'), signedIn, 'and renewed its FedCM twin');
    t.same(await sessionRows(page), [first], 'one session, the same one');
    t.same(await presentAlone(signedUp), [401, 401], 'the cookie from before the sign-in is refused');

    // A step-up from the step-up page.
    await page.goto(`${server.url}/auth/step-up?return=/account`);
    await page.click('button[data-action="step-up"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 }).catch(arrived('step-up did not return'));
    const steppedUp = (await cookie('kp_session'))!;
    t.not(steppedUp, signedIn, 'the step-up set a new session cookie');
    t.same(
      await sessionRows(page),
      [{ identifier: first!.identifier, assurance: 'sensitive' }],
      'the account page shows one session, the same one, now sensitive',
    );
    t.same(await presentAlone(signedIn), [401, 401], 'the cookie from before the step-up never became sensitive');

    // The page's own requests carry the new cookie: a sensitive action from the browser works.
    const regenerated = await page.evaluate(async () => {
      const res = await fetch('/auth/recovery/regenerate', { method: 'POST' });
      return { status: res.status, codes: ((await res.json()) as { codes?: unknown[] }).codes?.length };
    });
    t.same(regenerated, { status: 200, codes: 10 });
    t.same(problems, [], 'no page errors, failed loads or CSP violations');
  },
);
