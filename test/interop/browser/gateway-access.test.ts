import t from 'tap';
import { until } from '../../helpers/until.js';
import type { Page } from 'playwright-core';
import { request } from 'undici';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { world, type Jar, type World } from '../../gateway/real-world.js';

/**
 * Access rules at the gateway (docs/gateway.md#access-rules) as a person meets them: Chromium
 * signs up with a passkey through the gateway, is refused with the 403 page, before any consent
 * page, while it belongs to no org the route admits; once a member it signs in again through
 * "use another account" and passes; it is refused again once removed (after the next config
 * refresh, without signing in again), and "use another account" leads to the control plane's
 * account choice rather than back into a loop.
 */
const skip = chromiumSkip(t, 'gateway access rules in Chromium');

const POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [{ path: '/', min_assurance: 'passkey', allow: { orgs: [{ slug: 'acme' }] } }],
};

async function allowIfAsked(page: Page): Promise<void> {
  const form = page.locator('form[data-action="continue"] button[value="allow"]');
  if (await form.count()) await form.click();
}

async function postAs(base: string, cookie: string, path: string, body: unknown): Promise<void> {
  const res = await request(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base, cookie, accept: 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${text}`);
}

/** Waits (with a deadline) for a config version newer than `after`. */
async function nextConfig(w: World, after: number): Promise<number> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const version = w.gw.running.gateway.configHolder.current!.version;
    if (version > after) return version;
    if (Date.now() > deadline) throw new Error('the gateway never received the new config');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

t.test(
  'Chromium through the gateway: a stranger sees the 403 page, a member passes, a removed member is refused',
  { skip, timeout: 120_000 },
  async (t) => {
    const w = await world(t, POLICY, {
      pull: true,
      register: () => ({ scope: 'openid email profile offline_access' }),
    });
    const owner: Jar = w.user.jar;
    const { context, page, problems, addAuthenticator } = await launchChromium(t, {
      expectedFailures: ['/app/report'],
    });
    await addAuthenticator();
    const why = () => `at ${page.url()}; ${problems.join('; ')}`;
    const username = `visitor-${Date.now() % 100000}`;
    const app = `${w.gw.url}/app/report`;

    await t.test('signed up with a passkey, but in no org the route admits: the 403 page, never consent', async (t) => {
      const consentShown: string[] = [];
      page.on('load', () => {
        void page
          .locator('form[data-action="continue"]')
          .count()
          .then(
            (n) => (n > 0 ? consentShown.push(page.url()) : undefined),
            () => undefined,
          );
      });
      await page.goto(app);
      t.equal(new URL(page.url()).origin, w.cp.url, 'sent to the control plane to sign in');
      await page.fill('input[name="username"]', username);
      await page.click('button[data-action="signup"]');
      await page
        .waitForURL(
          (url) =>
            url.origin === w.gw.url || url.pathname === '/auth/authorize' || url.pathname.startsWith('/auth/continue'),
          { timeout: 20_000 },
        )
        .catch((error) => {
          throw new Error(`sign-up went nowhere ${why()}; ${error}`);
        });
      await page.waitForURL(app, { timeout: 20_000 }).catch((error) => {
        throw new Error(`not back at the app ${why()}; ${error}`);
      });
      t.match(await page.textContent('h1'), /^No access to localhost:\d+$/);
      t.equal(await page.textContent('[data-field="app"]'), new URL(w.gw.url).host, 'the page names the app');
      t.same(consentShown, [], 'no consent page on the way');
      const status = (await page.reload())?.status();
      t.equal(status, 403);
      t.equal(page.url(), app, 'no redirect loop: the browser stays where it was');
      t.equal(w.upstream.seen.length, 0, 'the app saw nothing');
      const receipts = await (await request(`${w.cp.url}/metrics`)).body.text();
      t.match(receipts, /keyplane_receipts_total\{kind="signin\.access_denied"\} [1-9]/, 'the refusal is a receipt');
    });

    await t.test(
      'once a member of the org, "use another account" signs the same account in, and it passes',
      async (t) => {
        const cookie = (await context.cookies(w.cp.url)).map((c) => `${c.name}=${c.value}`).join('; ');
        const before = w.gw.running.gateway.configHolder.current!.version;
        await postAs(w.cp.url, owner.header(), '/auth/orgs/create', { name: 'Acme' });
        await postAs(w.cp.url, owner.header(), '/org/acme/members/invite', { username, role: 'member' });
        await postAs(w.cp.url, cookie, '/org/acme/members/accept', {});
        // Creating the org, the invitation and the acceptance each change the config, and the gateway
        // may pull between them: the member passes once it holds a config with the acceptance.
        let joined = before;
        await until('the gateway holds the membership', async () => {
          joined = await nextConfig(w, joined);
          const directory = w.gw.running.gateway.configHolder.current!.directory;
          return Object.values(directory?.identities ?? {}).some((entry) => entry.username === username) || undefined;
        });
        // Still the refusal's page for a minute; the account choice ends it, and the same account is chosen.
        t.equal((await page.goto(app))?.status(), 403, 'the refusal still stands');
        await page.click('a[data-action="use-another-account"]');
        await page.waitForURL((url) => url.origin === w.cp.url, { timeout: 20_000 });
        await page.click('a[data-action="continue-as"], button[data-action="continue-as"]');
        await page.waitForURL((url) => url.origin === w.gw.url || url.pathname === '/auth/authorize', {
          timeout: 20_000,
        });
        await allowIfAsked(page);
        await page.waitForURL(app, { timeout: 20_000 }).catch((error) => {
          throw new Error(`not back at the app ${why()}; ${error}`);
        });
        t.equal(w.upstream.seen.length > 0, true, `the member reached the app ${why()}`);
        t.equal(w.upstream.last().headers['x-auth-assurance'], 'passkey');

        const me = w.upstream.last().headers['x-auth-subject'] as string;
        await postAs(w.cp.url, owner.header(), '/org/acme/members/remove', { user: me });
        await nextConfig(w, joined);
        const refused = await page.goto(app);
        t.equal(refused?.status(), 403, 'removed: refused without signing in again');
        t.equal(await page.textContent('[data-field="account"]'), username);
      },
    );

    await t.test('"use another account" leads to the account choice at the control plane', async (t) => {
      await page.click('a[data-action="use-another-account"]');
      await page
        .waitForURL((url) => url.origin === w.cp.url, { timeout: 20_000 })
        .catch((error) => {
          throw new Error(`"use another account" went nowhere ${why()}; ${error}`);
        });
      t.match(await page.textContent('h1'), /Choose an account/);
      t.ok(await page.locator('[data-action="use-another-account"]').count(), 'another account can be chosen there');
    });
  },
);
