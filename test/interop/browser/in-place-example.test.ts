import t from 'tap';
import { demoOrigins } from '../../../cli/src/commands/up.js';
import { startDemoApp } from '../../../cli/src/demo/demo-app.js';
import { ensureInPlaceDemoClient, IN_PLACE_DEMO_PATH } from '../../../cli/src/demo/demo-clients.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { PLATFORM_AUTHENTICATOR, chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * The in-place example page (deploy/examples/in-place/) as `keyplane up` serves it on its demo
 * app, driven in Debian's Chromium: the passkey-on-the-page button signs a new account up and then
 * in (direct grant, CDP virtual authenticator, RP ID localhost on the demo's localhost origin), and
 * the popup button signs another account up in Keyplane's window; each ends with the page's server
 * exchanging the code with its PKCE verifier and showing the verified claims.
 */
const skip = chromiumSkip(t, 'in-place example suite');

t.test('the in-place example page served by the demo app', { skip }, async (t) => {
  const server = await startLiveControlPlane(t);
  const port = await findFreePort('127.0.0.1');
  const origins = demoOrigins('127.0.0.1', port);
  t.same(origins, [`http://localhost:${port}`, `http://127.0.0.1:${port}`]);
  const client = await ensureInPlaceDemoClient(server.services, { origins });
  t.ok(client.created);
  const registered = (await server.services.storage.clients.get(client.clientId))!;
  t.match(registered.metadata, {
    in_place: true,
    first_party: true,
    token_endpoint_auth_method: 'none',
    redirect_uris: origins.map((o) => `${o}/in-place/callback`),
  });
  t.same(
    await ensureInPlaceDemoClient(server.services, { origins }),
    { clientId: client.clientId, created: false },
    'remembered across starts',
  );

  const demo = await startDemoApp({
    port,
    host: '127.0.0.1',
    gatewayUrl: 'http://127.0.0.1:9',
    inPlace: { issuer: server.url, clientId: client.clientId },
  });
  t.teardown(() => demo.close());
  const pageUrl = `${origins[0]}${IN_PLACE_DEMO_PATH}`;
  const html = await fetch(pageUrl);
  t.equal(html.status, 200);
  t.match(html.headers.get('content-security-policy'), /script-src 'self'/);
  t.same(await (await fetch(`${pageUrl}config.json`)).json(), { issuer: server.url, clientId: client.clientId });
  const bad = await fetch(`${pageUrl}token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: 'x', code_verifier: 'y', redirect_uri: `${pageUrl}callback` }),
  });
  t.equal(((await bad.json()) as { ok: boolean }).ok, false, 'a made-up code is refused by the control plane');

  const { page, context, problems, addAuthenticator } = await launchChromium(t, { expectedFailures: ['/auth/token'] });
  await addAuthenticator();
  await page.goto(pageUrl);
  const status = page.locator('#status');
  const waitFor = async (pattern: RegExp) => {
    await page
      .waitForFunction(
        (source) => new RegExp(source).test((globalThis as any).document.getElementById('status').textContent ?? ''),
        pattern.source,
        { timeout: 60_000 },
      )
      .catch(async (error) => {
        throw new Error(
          `status "${await status.textContent()}" never matched ${pattern}: ${problems.join(' | ')} ${error}`,
        );
      });
  };
  await waitFor(/^Ready/);

  await t.test('passkey on the page: sign up in place, then sign in with the new passkey', async (t) => {
    await page.fill('#username', 'newt');
    await page.check('#signup');
    await page.click('#direct');
    await waitFor(/Signed in with the passkey as newt/);
    const claims = JSON.parse((await page.textContent('#claims'))!);
    t.match(claims, {
      iss: server.url,
      aud: client.clientId,
      preferred_username: 'newt',
      svc: { assurance: 'passkey' },
    });

    await page.evaluate(() => {
      (globalThis as any).document.getElementById('status').textContent = '';
    });
    await page.uncheck('#signup');
    await page.fill('#username', '');
    await page.click('#direct');
    await waitFor(/Signed in with the passkey as newt/);
    t.pass('signed in again with the passkey made on the page');
  });

  await t.test("popup: sign up in Keyplane's window, the code comes back by postMessage", async (t) => {
    await page.evaluate(() => {
      (globalThis as any).document.getElementById('status').textContent = '';
    });
    const [popup] = await Promise.all([context.waitForEvent('page'), page.click('#popup')]);
    const cdp = await context.newCDPSession(popup);
    await cdp.send('WebAuthn.enable', { enableUI: false });
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: PLATFORM_AUTHENTICATOR,
    });
    await popup.waitForSelector('input[name="username"]', { timeout: 60_000 });
    // The sign-in page's module script must be wired before the click (under load it comes late).
    await popup.waitForLoadState('load', { timeout: 60_000 });
    await popup.fill('input[name="username"]', 'popper');
    await popup.click('button[data-action="signup"]');
    popup.on('console', (message) => problems.push(`popup console: ${message.text()}`));
    popup.on('framenavigated', (frame) => problems.push(`popup at ${frame.url()}`));
    await waitFor(/Signed in with the popup as popper/).catch(async (error) => {
      throw new Error(
        `${error} popup: ${popup.isClosed() ? 'closed' : `${popup.url()} ${await popup.textContent('body').catch(() => '')}`}`,
      );
    });
    t.match(JSON.parse((await page.textContent('#claims'))!), { aud: client.clientId, preferred_username: 'popper' });
    await popup.waitForEvent('close', { timeout: 10_000 }).catch(() => undefined);
    t.ok(popup.isClosed(), 'the popup closed itself');
  });
});
