import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * The post-sign-in `return` in a real browser: Chromium drops tabs and newlines from URLs, so
 * `/\t/evil.example` becomes `//evil.example`, which is another host. Every such target must
 * land on this origin (the account page), and a plain path must still be honoured.
 */
const skip = chromiumSkip(t, 'browser return-URL suite');

t.test('after sign-in, tricky return targets never leave the origin', { skip, timeout: 120_000 }, async (t) => {
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
  const { page, problems, addAuthenticator } = await launchChromium(t, {
    expectedFailures: ['/auth/assertion-options'],
  });
  await addAuthenticator();
  await page.goto(`${server.url}/auth`);
  await page.fill('input[name="username"]', 'returner');
  await page.click('button[data-action="signup"]');
  await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });

  const signInWith = async (target: string): Promise<URL> => {
    await page.goto(`${server.url}/auth?return=${encodeURIComponent(target)}`);
    await page.fill('input[name="username"]', '');
    await Promise.all([
      page
        .waitForURL((url) => !(url.origin === server.url && url.pathname === '/auth'), { timeout: 20_000 })
        .catch((error) => {
          throw new Error(`no navigation after sign-in for ${JSON.stringify(target)}: ${problems.join('; ')} ${error}`);
        }),
      page.click('button[data-action="signin"]'),
    ]);
    return new URL(page.url());
  };

  for (const target of [
    '/\t/evil.example/',
    '/\n/evil.example/',
    '/\r\n/evil.example',
    '/%09/evil.example',
    '//evil.example/',
    '/\\evil.example/',
    '\\/evil.example/',
    'javascript:alert(1)',
    '/%5cevil.example',
  ]) {
    const landed = await signInWith(target);
    t.equal(landed.origin, server.url, `${JSON.stringify(target)} stays on the origin`);
    t.equal(landed.pathname, '/account', `${JSON.stringify(target)} falls back to /account`);
  }
  const good = await signInWith('/account?tab=sessions');
  t.equal(`${good.pathname}${good.search}`, '/account?tab=sessions', 'a plain path on this server is honoured');
});
