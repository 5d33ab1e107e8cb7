import t from 'tap';
import { createServer } from 'node:http';
import { findFreePort } from '#lib/runtime/listen.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { registerLiveClient, startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * A v1 page in real Chromium: the relying party's page on another origin loads
 * `auth-client.js`, a click on `data-signin` goes to the issuer, the person signs up with a
 * passkey (CDP virtual authenticator), and the browser lands on the v1 return URL with a session
 * token that the relying party's server redeems at `POST /auth/verify-session`.
 */
const skip = chromiumSkip(t, 'browser v1 bridge suite');

t.test(
  'data-signin on a v1 page: passkey sign-up at the issuer, back with a token the server redeems',
  { skip, timeout: 90_000 },
  async (t) => {
    const server = await startLiveControlPlane(t);
    const port = await findFreePort();
    const rp = `http://127.0.0.1:${port}`;
    const returnUrl = `${rp}/v1/return`;
    await registerLiveClient(server.url, {
      redirect_uris: [returnUrl],
      v1_bridge: true,
      token_endpoint_auth_method: 'none',
    });
    const redeemed: Array<Record<string, unknown>> = [];
    const app = createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', rp);
      if (url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>Legacy app</title>
<script src="${server.url}/auth-client.js" data-return="${returnUrl}"></script>
<button data-signin><span>Sign in</span></button> <a href="#" data-recover>Lost your passkey?</a>`);
        return;
      }
      if (url.pathname === '/v1/return') {
        const answer = await fetch(`${server.url}/auth/verify-session`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ token: url.searchParams.get('session') }),
        });
        const body = (await answer.json()) as Record<string, unknown>;
        redeemed.push({ status: answer.status, deprecation: answer.headers.get('deprecation'), ...body });
        res
          .writeHead(200, { 'content-type': 'text/html' })
          .end(`<!doctype html><title>Signed in</title><p id="who">${String(body.identityId ?? body.reason)}</p>`);
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => app.listen(port, '127.0.0.1', resolve));
    t.teardown(() => new Promise((resolve) => app.close(resolve)));

    const { page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    const warnings: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'warning') warnings.push(message.text());
    });
    await page.goto(`${rp}/`);
    await page.click('[data-signin] span');
    await page.waitForURL((url) => url.origin === server.url && url.pathname === '/auth', { timeout: 20_000 });
    t.equal(new URL(page.url()).searchParams.get('return'), `/auth/v1/return?to=${encodeURIComponent(returnUrl)}`);
    await page.fill('input[name="username"]', 'legacy-ada');
    await page.click('button[data-action="signup"]');
    // The client is the operator's but not first-party: the person approves it once (docs/v1-bridge.md).
    await page.waitForSelector('form[data-action="continue"]', { timeout: 20_000 });
    t.match(await page.textContent('main'), /Live RP/, 'the approval page names the client');
    await page.click('form[data-action="continue"] button[value="allow"]');
    await page
      .waitForURL((url) => url.href.startsWith(returnUrl), { timeout: 20_000 })
      .catch((error: Error) => {
        throw new Error(`never reached the v1 return URL: ${page.url()} ${problems.join('; ')} ${error.message}`);
      });
    t.match(await page.locator('#who').textContent(), /^usr_/);
    t.equal(redeemed.length, 1);
    t.match(redeemed[0], { status: 200, ok: true, identityId: /^usr_/, deprecation: /^@\d+$/ });
    t.ok(
      warnings.some((w) => w.includes('deprecated')),
      'the script warns in the console',
    );

    await page.goto(`${rp}/`);
    await page.click('[data-recover]');
    await page.waitForURL(`${server.url}/auth/recovery`, { timeout: 10_000 });
    t.pass('data-recover opens the recovery page');
  },
);
