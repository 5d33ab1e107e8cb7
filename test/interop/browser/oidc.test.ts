import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createHash, randomBytes } from 'node:crypto';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * The OIDC provider in a real browser (Debian's Chromium via playwright-core): the full redirect
 * flow through sign-in, resumption and the one-tap form (whose CSP form-action must allow the
 * redirect to the client), and the web_message popup, which hands the code to an opener on the
 * registered origin and to no other.
 */
const ADMIN = 'browser-admin-token-0123456789abcdef0123456789';

const skip = chromiumSkip(t, 'browser OIDC suite');

/** A relying party's page: records every message it receives and can open a popup. */
const RP_PAGE = `<!doctype html><html><body><h1>RP</h1><script>
window.received = [];
window.addEventListener('message', (event) => window.received.push({ origin: event.origin, data: event.data }));
window.openPopup = (url) => { window.popup = window.open(url, 'keyplane', 'popup,width=480,height=640'); return !!window.popup; };
</script></body></html>`;

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

t.test('OIDC in Chromium', { skip }, async (t) => {
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir: tempDir(t),
      host: '127.0.0.1',
      port: 0,
      masterKey: TEST_MASTER_KEY,
      logLevel: 'warn',
      adminToken: ADMIN,
    },
  });
  const server: RunningControlPlane = await startControlPlane(config, {
    logStream: new Writable({
      write(_c, _e, done) {
        done();
      },
    }),
  });
  t.teardown(() => server.close());

  const rp = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(RP_PAGE);
  });
  const rpPort = await listen(rp, '127.0.0.1');
  t.teardown(() => new Promise<void>((resolve) => rp.close(() => resolve())));
  const rpOrigin = `http://localhost:${rpPort}`;
  // The same page on another origin (127.0.0.1 is a different origin from localhost).
  const otherOrigin = `http://127.0.0.1:${rpPort}`;
  const callback = `${rpOrigin}/callback`;

  const reg = await fetch(`${server.url}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Browser RP',
      redirect_uris: [callback],
      token_endpoint_auth_method: 'none',
      scope: 'openid profile',
      in_place: true,
    }),
  });
  t.equal(reg.status, 201);
  const clientId = ((await reg.json()) as { client_id: string }).client_id;

  const { page, problems, addAuthenticator } = await launchChromium(t, { traceResponses: true });
  await addAuthenticator();

  const authorizeUrl = (extra: Record<string, string>) => {
    const { challenge } = pkce();
    return `${server.url}/auth/authorize?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: callback,
      response_type: 'code',
      scope: 'openid profile',
      state: 'st-browser',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    })}`;
  };

  await t.test(
    'redirect flow: sign-up on the sign-in page, resumption, one tap, back to the client with the code',
    async (t) => {
      await page.goto(authorizeUrl({}));
      t.equal(new URL(page.url()).pathname, '/auth', 'no session: the sign-in page');
      await page.fill('input[name="username"]', 'popper');
      await page.click('button[data-action="signup"]');
      await page.waitForSelector('form[data-action="continue"]', { timeout: 20_000 });
      t.match(await page.textContent('h1'), /Continue to Browser RP/);
      await Promise.all([
        page
          .waitForURL((url) => url.href.startsWith(callback), { timeout: 20_000 })
          .catch(async (error) => {
            throw new Error(
              `not back at the client: ${page.url()} ${(await page.textContent('main').catch(() => ''))?.trim()} ${problems.join(' | ')} ${error}`,
            );
          }),
        page.click('form[data-action="continue"] button[value="allow"]'),
      ]);
      const landed = new URL(page.url());
      t.match(landed.searchParams.get('code'), /^[A-Za-z0-9_-]{43}$/);
      t.equal(landed.searchParams.get('state'), 'st-browser');
      t.equal(landed.searchParams.get('iss'), server.url);
    },
  );

  await t.test('popup: the registered origin receives {code, state, iss}', async (t) => {
    await page.goto(`${rpOrigin}/`);
    t.ok(
      await page.evaluate(
        (url) => (globalThis as any).openPopup(url),
        authorizeUrl({ response_mode: 'web_message', prompt: 'none' }),
      ),
    );
    await page.waitForFunction(() => (globalThis as any).received.length > 0, undefined, { timeout: 20_000 });
    const received = await page.evaluate(() => (globalThis as any).received);
    t.equal(received.length, 1);
    t.equal(received[0].origin, server.url, "posted by the provider's page");
    t.match(received[0].data, { code: /^[A-Za-z0-9_-]{43}$/, state: 'st-browser', iss: server.url });
    await page.waitForFunction(() => (globalThis as any).popup.closed, undefined, { timeout: 10_000 });
  });

  await t.test('popup: a page on another origin receives nothing', async (t) => {
    await page.goto(`${otherOrigin}/`);
    t.ok(
      await page.evaluate(
        (url) => (globalThis as any).openPopup(url),
        authorizeUrl({ response_mode: 'web_message', prompt: 'none' }),
      ),
    );
    // The popup posts (to the registered origin only) and closes itself; wait for that, then a moment more.
    await page.waitForFunction(() => (globalThis as any).popup.closed, undefined, { timeout: 20_000 });
    await page.waitForTimeout(300);
    t.same(await page.evaluate(() => (globalThis as any).received), [], 'no message reached the other origin');
  });
});
