import type { Test } from 'tap';
import { createRequire } from 'node:module';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { demoOrigins } from '../../cli/src/commands/up.js';
import { startDemoApp } from '../../cli/src/demo/demo-app.js';
import { loadGatewayConfig } from '#config/load.js';
import { ensureInPlaceDemoClient } from '../../cli/src/demo/demo-clients.js';
import { DEMO_POLICY, ensureDemoGatewayClient } from '../../cli/src/demo/demo-clients.js';
import { startGateway } from '../../gateway/src/server.js';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { computeS256Challenge } from '#lib/pkce/check-pkce.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { CHROMIUM, PLATFORM_AUTHENTICATOR } from './browser.js';
import { tempDir } from './build.js';
import { registerLiveClient, startLiveControlPlane } from './live-browser.js';
import { linkIn, readOutbox } from './smtp.js';
import { makeTestCa, startHttpsServer } from './tls.js';

const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
const AXE = createRequire(import.meta.url).resolve('axe-core');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run'];
const QUIET = new Writable({
  write(_c, _e, done) {
    done();
  },
});

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * Every page the control plane, the gateway and the demo app render, audited by axe-core in
 * Debian's Chromium against the WCAG 2.0/2.1/2.2 A and AA rules (docs/accessibility.md): a
 * serious or critical violation fails the page and is printed. One browser, one context per
 * locale, pages in sequence, an account's life in order (signed out, signed up, signed in,
 * signed out). Also: a form error is announced, tied to its field, and focused.
 *
 * Each locale gets its own context sending it as `Accept-Language`. The suite is split by locale
 * (test/interop/browser/a11y-*.test.ts) so that the two walks, about half a minute each, run in
 * parallel test processes; each file sets up the same servers, clients and browser.
 */
export async function auditEveryPage(t: Test, locales: readonly string[]): Promise<void> {
  const tls = makeTestCa(t);
  const dataDir = tempDir(t);
  const server = await startLiveControlPlane(t, {
    dataDir,
    'lifetimes.stepUp': 3600,
    'fetch.allowPrivateTargets': true,
    'fetch.caFile': tls.caFile,
    'scan.rescanIntervalHours': 0,
  });
  const cp = server.url;

  // A site to scan (the scan report and the seal's verification page).
  const site = await startHttpsServer(t, tls, (_req, res) => {
    res.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      'strict-transport-security': 'max-age=31536000',
    });
    res.end('<!doctype html><html lang="en"><title>Shop</title><h1>Shop</h1></html>');
  });
  // The relying parties' callbacks: a page that says nothing.
  const rpServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><html lang="en"><title>Callback</title><p>back at the app</p></html>');
  });
  await new Promise<void>((resolve) => rpServer.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => rpServer.close(resolve)));
  const rp = `http://localhost:${(rpServer.address() as AddressInfo).port}`;

  // The demo app behind the gateway, with its in-place example, as `keyplane up` runs them.
  const gatewayPort = await findFreePort();
  const gatewayUrl = `http://localhost:${gatewayPort}`;
  const demoPort = await findFreePort();
  const inPlace = await ensureInPlaceDemoClient(server.services, { origins: demoOrigins('localhost', demoPort) });
  const demo = await startDemoApp({
    port: demoPort,
    host: '127.0.0.1',
    gatewayUrl,
    inPlace: { issuer: cp, clientId: inPlace.clientId },
  });
  t.teardown(() => demo.close());
  // The demo's routes, and one only an org nobody belongs to may use (the gateway's 403 page).
  const policy: GatewayPolicy = {
    ...DEMO_POLICY,
    routes: [
      ...DEMO_POLICY.routes,
      { path: '/members', min_assurance: 'passkey', allow: { orgs: [{ slug: 'nobody-co' }] } },
    ],
  };
  const gatewayClient = await ensureDemoGatewayClient(server.services, { gatewayUrl, policy });
  const gateway = await startGateway(
    loadGatewayConfig({
      env: {},
      overrides: {
        host: '127.0.0.1',
        port: gatewayPort,
        publicUrl: gatewayUrl,
        controlPlane: cp,
        upstream: demo.url,
        clientId: gatewayClient.clientId,
        clientSecret: gatewayClient.clientSecret,
        dataDir: join(dataDir, 'gateway'),
        logLevel: 'warn',
      },
    }),
    { logStream: QUIET },
  );
  t.teardown(() => gateway.close());

  const client = await registerLiveClient(cp, {
    client_name: 'Notes',
    redirect_uris: [`${rp}/cb`],
    token_endpoint_auth_method: 'none',
    scope: 'openid',
  });
  const gatedClient = await registerLiveClient(cp, {
    client_name: 'Members only',
    redirect_uris: [`${rp}/cb`],
    token_endpoint_auth_method: 'none',
    scope: 'openid',
    access: { orgs: [{ slug: 'nobody-co', roles: ['owner'] }] },
  });
  const deviceClient = await registerLiveClient(cp, {
    client_name: 'TV',
    grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
    token_endpoint_auth_method: 'none',
    scope: 'openid',
  });
  const v1Return = `${rp}/v1/return`;
  await registerLiveClient(cp, {
    client_name: 'Legacy',
    redirect_uris: [v1Return],
    v1_bridge: true,
    token_endpoint_auth_method: 'none',
  });
  const authorize = (clientId: string, extra: Record<string, string> = {}) =>
    `${cp}/auth/authorize?${new URLSearchParams({
      client_id: clientId,
      redirect_uri: `${rp}/cb`,
      response_type: 'code',
      scope: 'openid',
      state: 's',
      code_challenge: computeS256Challenge('v'.repeat(43)),
      code_challenge_method: 'S256',
      ...extra,
    })}`;
  const userCode = async () => {
    const res = await fetch(`${cp}/auth/device`, {
      method: 'POST',
      body: new URLSearchParams({ client_id: deviceClient['client_id'] as string, scope: 'openid' }),
    });
    return ((await res.json()) as { user_code: string }).user_code;
  };

  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
  t.teardown(() => browser.close());

  for (const locale of locales) {
    await t.test(`in ${locale}`, async (t) => {
      // bypassCSP for this audit context only: our pages' strict CSP (nonces, `default-src 'none'`
      // on the gateway's and the demo's pages) would refuse the injected axe-core script. Every
      // other browser suite runs with the CSP on, and these pages are audited, not exercised.
      const context: BrowserContext = await browser.newContext({
        bypassCSP: true,
        locale,
        extraHTTPHeaders: { 'accept-language': locale },
        ignoreHTTPSErrors: true,
      });
      t.teardown(() => context.close());
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      await cdp.send('WebAuthn.enable', { enableUI: false });
      await cdp.send('WebAuthn.addVirtualAuthenticator', { options: PLATFORM_AUTHENTICATOR });
      const username = `ada-${locale}`.toLowerCase();
      const audited: string[] = [];

      /** Runs axe on the page as it is now; a serious or critical violation fails it. */
      async function audit(label: string, expectPath?: string | RegExp): Promise<void> {
        await page.waitForLoadState('load');
        const where = new URL(page.url());
        if (expectPath !== undefined) {
          const ok = typeof expectPath === 'string' ? where.pathname === expectPath : expectPath.test(where.pathname);
          if (!ok) {
            t.fail(`${label}: expected ${expectPath}, at ${page.url()}`);
            return;
          }
        }
        await page.addScriptTag({ path: AXE });
        const violations = await page.evaluate(async (tags: string[]): Promise<Violation[]> => {
          const inPage = globalThis as any;
          const result = await inPage.axe.run(inPage.document, {
            runOnly: { type: 'tag', values: tags },
            resultTypes: ['violations'],
          });
          return result.violations.map((v: any) => ({
            id: v.id,
            impact: v.impact,
            help: v.help,
            nodes: v.nodes.slice(0, 5).map((n: any) => `${n.target.join(' ')}: ${n.failureSummary ?? ''}`),
          }));
        }, TAGS);
        const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
        audited.push(label);
        t.same(
          bad.map((v) => `${v.impact} ${v.id}: ${v.help}\n    ${v.nodes.join('\n    ')}`),
          [],
          `${label} (${where.pathname}, "${await page.title()}"): no serious or critical violation`,
        );
      }
      const activeId = () => page.evaluate<string>('document.activeElement ? document.activeElement.id : ""');
      const visit = async (label: string, url: string, expectPath?: string | RegExp) => {
        await page.goto(url);
        await audit(label, expectPath);
      };

      // Signed out.
      await visit('sign-in', `${cp}/auth`, '/auth');
      await visit('sign-in, signed out', `${cp}/auth?done=signed-out`, '/auth');
      await visit('backup-code form', `${cp}/auth/recovery`, '/auth/recovery');
      await page.fill('#recovery-user', 'nobody');
      await page.fill('#recovery-code', 'AAAA-BBBB-CCCC');
      await Promise.all([
        page.waitForEvent('load'),
        page.click('form[action="/auth/recovery/verify"] button[type="submit"]'),
      ]);
      await audit('backup-code form with an error');
      await t.test('a form error is announced, tied to its field and focused', async (t) => {
        t.equal(await activeId(), 'recovery-user', 'focus is on the first invalid field');
        t.equal(await page.getAttribute('#recovery-user', 'aria-invalid'), 'true');
        const describedBy = (await page.getAttribute('#recovery-user', 'aria-describedby')) ?? '';
        const alert = page.locator(`#${describedBy.split(' ')[0]}`);
        t.equal(await alert.getAttribute('role'), 'alert', 'the message is in an alert region');
        t.ok(((await alert.textContent()) ?? '').trim().length > 0, 'the region says what is wrong');
      });
      await visit('magic-link request', `${cp}/auth/magic/request`, '/auth/magic/request');
      await page.fill('#magic-email', 'ada@example.com');
      await Promise.all([
        page.waitForEvent('load'),
        page.click('form[action="/auth/magic/request"] button[type="submit"]'),
      ]);
      await audit('magic-link requested');
      await visit('magic link refused', `${cp}/auth/magic?token=not-a-token`);
      await visit('e-mail link refused', `${cp}/auth/email/verify?token=not-a-token`);
      await visit('authorize error page', `${cp}/auth/authorize?client_id=unknown&response_type=code`);
      await visit('contact', `${cp}/contact`, '/contact');
      await visit('changelog', `${cp}/changelog`, '/changelog');
      await visit('connectors', `${cp}/connectors`, '/connectors');
      await visit('v1 migration guide', `${cp}/auth/v1/migrate`, '/auth/v1/migrate');
      await visit('scan', `${cp}/scan`, '/scan');
      await page.fill('#scan-url', `${site.origin}/`);
      await Promise.all([
        page.waitForURL(/\/scan\?url=/, { timeout: 30_000 }),
        page.click('form[action="/scan"] button[type="submit"]'),
      ]);
      await audit('scan report', '/scan');

      // Signed up with a passkey.
      await page.goto(`${cp}/auth`);
      await page.fill('#username', username);
      await page.click('button[data-action="signup"]');
      await page.waitForURL(`${cp}/account`, { timeout: 20_000 });
      await audit('account', '/account');
      await t.test('a TOTP code the server refuses is announced, tied to its field and focused', async (t) => {
        await page.click('button[data-sf-action="totp-setup"]');
        await page.waitForSelector('#totp-setup-panel:not([hidden])', { timeout: 10_000 });
        await page.fill('#totp-code', '000000');
        await page.click('form[data-sf-form="totp-confirm"] button[type="submit"]');
        await page.waitForSelector('#totp-code[aria-invalid="true"]', { timeout: 10_000 });
        t.equal(await activeId(), 'totp-code', 'focus is on the field');
        const describedBy = (await page.getAttribute('#totp-code', 'aria-describedby')) ?? '';
        const regions = [];
        for (const id of describedBy.split(' ').filter(Boolean)) {
          const region = page.locator(`#${id}`);
          regions.push({
            live: (await region.getAttribute('aria-live')) ?? (await region.getAttribute('role')) ?? '',
            text: (await region.textContent()) ?? '',
          });
        }
        t.ok(
          regions.some((r) => /polite|assertive|alert/.test(r.live) && r.text.trim().length > 0),
          `the message is in a live region the field names (${JSON.stringify(regions)})`,
        );
        await audit('account with a TOTP error');
      });
      await visit('agents', `${cp}/account/agents`, '/account/agents');
      await visit('apps', `${cp}/apps`, '/apps');
      await visit('SAML apps', `${cp}/apps/saml`, '/apps/saml');
      await visit('rollout', `${cp}/rollout`, '/rollout');
      await page.goto(`${cp}/account`);
      await page.fill('#org-name', `Org ${locale}`);
      await Promise.all([
        page.waitForURL(/\/org\//, { timeout: 20_000 }),
        page.click('button[data-action="create-org"]'),
      ]);
      await audit('org', /^\/org\//);
      const slug = new URL(page.url()).pathname.split('/')[2]!;
      const siteId = await page.evaluate(
        async ({ slug, url }) => {
          await fetch(`/org/${slug}/websites/add`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json' },
            body: JSON.stringify({ url }),
          });
          const view = (await (await fetch(`/org/${slug}?format=json`)).json()) as {
            sites: Array<{ siteId: string }>;
          };
          return view.sites[0]!.siteId;
        },
        { slug, url: `${site.origin}/` },
      );
      await visit('org with a site', `${cp}/org/${slug}`, `/org/${slug}`);
      await visit('seal verification', `${cp}/verify/${siteId}`, `/verify/${siteId}`);
      await visit('step-up', `${cp}/auth/step-up?return=/account`, '/auth/step-up');
      await visit('consent', authorize(client['client_id'] as string), '/auth/authorize');
      await visit('account choice', authorize(client['client_id'] as string, { prompt: 'select_account' }));
      await visit('not admitted', authorize(gatedClient['client_id'] as string));
      await visit('v1 bridge approval', `${cp}/auth/v1/return?to=${encodeURIComponent(v1Return)}`);
      await visit(
        'popup answer (web_message)',
        `${cp}/auth/authorize?${new URLSearchParams({
          client_id: inPlace.clientId,
          redirect_uri: `http://localhost:${demoPort}/in-place/callback`,
          response_type: 'code',
          response_mode: 'web_message',
          scope: 'openid',
          state: 's',
          code_challenge: computeS256Challenge('v'.repeat(43)),
          code_challenge_method: 'S256',
        })}`,
      );
      await visit('SAML error page', `${cp}/saml/sso?SAMLRequest=not-a-request`, '/saml/sso');
      const added = await page.evaluate(
        async (email) =>
          (
            await fetch('/auth/email/add', {
              method: 'POST',
              headers: { 'content-type': 'application/json', accept: 'application/json' },
              body: JSON.stringify({ email }),
            })
          ).status,
        `${username}@example.com`,
      );
      t.equal(added, 200, 'an address to verify');
      await server.services.mailer.idle();
      const verifyLink = linkIn((await readOutbox(dataDir)).at(-1)!, '/auth/email/verify')!;
      await visit('e-mail verified', verifyLink, '/auth/email/verify');
      await visit('device code', `${cp}/device`, '/device');
      await page.fill('#user-code', 'BCDF-GHJK');
      await Promise.all([
        page.waitForEvent('load'),
        page.click('form[data-action="device-code"] button[type="submit"]'),
      ]);
      await audit('device code with an error');
      await page.goto(`${cp}/device`);
      await page.fill('#user-code', await userCode());
      await Promise.all([
        page.waitForEvent('load'),
        page.click('form[data-action="device-code"] button[type="submit"]'),
      ]);
      await audit('device consent');

      // Through the gateway: the demo app, its step-up, the 403 page, the sign-out page.
      await page.goto(`${gatewayUrl}/`);
      await page.waitForURL(`${gatewayUrl}/`, { timeout: 20_000 });
      await audit('demo app behind the gateway', '/');
      await visit('demo app, public route', `${gatewayUrl}/public`, '/public');
      await page.goto(`${gatewayUrl}/admin`);
      await audit('gateway step-up', '/auth/step-up');
      await visit('gateway 403', `${gatewayUrl}/members`, '/members');
      await visit('gateway sign-out', `${gatewayUrl}/_gate/signout`, '/_gate/signout');
      await visit('in-place example', `http://localhost:${demoPort}/in-place/`, '/in-place/');
      await visit('in-place callback', `http://localhost:${demoPort}/in-place/callback`, '/in-place/callback');

      await visit('sign-out', `${cp}/auth/logout`, '/auth/logout');
      await Promise.all([page.waitForEvent('load'), page.click('form[data-action="logout"] button[type="submit"]')]);
      await audit('signed out');
      // The gateway's own sign-out, last: the page it returns to says the person is signed out.
      // Its session may have ended with the control plane's already (then there is no form to post).
      await page.goto(`${gatewayUrl}/_gate/signout`);
      const confirm = page.locator('button[data-action="signout"]');
      if (await confirm.count()) await confirm.click();
      await page.waitForSelector('a[data-action="sign-in-again"]', { timeout: 20_000 });
      await audit('gateway signed out', '/');
      t.ok(audited.length >= 40, `${audited.length} pages audited`);
    });
  }
}
