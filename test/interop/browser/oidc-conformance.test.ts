import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { LIVE_ADMIN, startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * The conformance additions in a real browser: the consent page loads the client's https logo
 * under its strict CSP and links its policy and terms; response_mode=form_post submits the
 * authorization response to the client by its nonce'd script, and without JavaScript by its
 * noscript button; prompt=select_account continues with the signed-in account.
 */

const skip = chromiumSkip(t, 'browser OIDC conformance suite');
const LOGO = 'https://logo.example.test/brand/logo.svg';
const LOGO_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64"><rect width="64" height="64" fill="#0b57d0"/></svg>';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

t.test('OIDC conformance additions in Chromium', { skip }, async (t) => {
  const server = await startLiveControlPlane(t);
  const posts: Array<{ origin: string | undefined; body: URLSearchParams }> = [];
  const rp = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method === 'POST') posts.push({ origin: req.headers.origin, body: new URLSearchParams(body) });
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><title>RP</title><h1>RP ${req.method}</h1>`);
    });
  });
  const rpPort = await listen(rp);
  t.teardown(() => new Promise<void>((resolve) => rp.close(() => resolve())));
  const callback = `http://localhost:${rpPort}/callback`;

  const reg = await fetch(`${server.url}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Form RP',
      redirect_uris: [callback],
      token_endpoint_auth_method: 'none',
      logo_uri: LOGO,
      policy_uri: 'https://rp.example.test/privacy',
      tos_uri: 'https://rp.example.test/terms',
    }),
  });
  t.equal(reg.status, 201);
  const clientId = ((await reg.json()) as { client_id: string }).client_id;
  const authorizeUrl = (extra: Record<string, string>) =>
    `${server.url}/auth/authorize?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: callback,
      response_type: 'code',
      scope: 'openid profile',
      state: 'st-form',
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
      code_challenge_method: 'S256',
      ...extra,
    })}`;

  const { page, problems, addAuthenticator, cdp } = await launchChromium(t);
  await addAuthenticator();
  // The logo's host, answered by the browser harness: what reaches it passed the page's CSP first.
  const logoLoads: string[] = [];
  await page.route(`${LOGO}*`, (route) => {
    logoLoads.push(route.request().url());
    return route.fulfill({ status: 200, contentType: 'image/svg+xml', body: LOGO_SVG });
  });
  const cspViolations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });

  await t.test('consent shows the https logo under the CSP, and the policy and terms links', async (t) => {
    await page.goto(authorizeUrl({ response_mode: 'form_post' }));
    t.equal(new URL(page.url()).pathname, '/auth');
    await page.fill('input[name="username"]', 'formrp');
    await page.click('button[data-action="signup"]');
    await page.waitForSelector('form[data-action="continue"]', { timeout: 20_000 });
    const logo = page.locator('img[data-field="logo_uri"]');
    await logo.waitFor();
    t.ok(
      await page.waitForFunction(
        () => (globalThis as any).document.querySelector('img[data-field="logo_uri"]')?.naturalWidth === 64,
        undefined,
        { timeout: 10_000 },
      ),
      'the logo loaded',
    );
    t.same(logoLoads, [LOGO]);
    t.equal(await page.getAttribute('a[data-field="policy_uri"]', 'href'), 'https://rp.example.test/privacy');
    t.equal(await page.getAttribute('a[data-field="tos_uri"]', 'href'), 'https://rp.example.test/terms');
    t.same(cspViolations, [], 'nothing on the page broke its CSP');
  });

  await t.test('form_post: the approval ends in a POST of the response to the callback', async (t) => {
    await Promise.all([
      page.waitForURL(callback, { timeout: 20_000 }).catch((error) => {
        throw new Error(`no POST to the callback: ${page.url()} ${problems.join(' | ')} ${error}`);
      }),
      page.click('form[data-action="continue"] button[value="allow"]'),
    ]);
    t.equal(await page.textContent('h1'), 'RP POST');
    t.equal(posts.length, 1);
    t.match(posts[0]!.body.get('code'), /^[A-Za-z0-9_-]{43}$/);
    t.equal(posts[0]!.body.get('state'), 'st-form');
    t.equal(posts[0]!.body.get('iss'), server.url);
    t.same(cspViolations, []);
  });

  await t.test('form_post without JavaScript: the noscript button posts the response', async (t) => {
    await cdp.send('Emulation.setScriptExecutionDisabled', { value: true });
    t.teardown(() => cdp.send('Emulation.setScriptExecutionDisabled', { value: false }));
    await page.goto(authorizeUrl({ response_mode: 'form_post', state: 'st-noscript' }));
    t.equal(new URL(page.url()).pathname, '/auth/authorize', 'the form_post page waits');
    await Promise.all([
      page.waitForURL(callback, { timeout: 20_000 }),
      page.click('form[data-action="form-post"] button[type="submit"]'),
    ]);
    t.equal(posts.length, 2);
    t.equal(posts[1]!.body.get('state'), 'st-noscript');
  });

  await t.test('select_account: continue as the signed-in account', async (t) => {
    await page.goto(authorizeUrl({ prompt: 'select_account', state: 'st-select' }));
    t.match(await page.textContent('h1'), /Choose an account for Form RP/);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(callback), { timeout: 20_000 }),
      page.click('a[data-action="continue-as"]'),
    ]);
    const landed = new URL(page.url());
    t.equal(landed.searchParams.get('state'), 'st-select');
    t.match(landed.searchParams.get('code'), /^[A-Za-z0-9_-]{43}$/);
  });
});
