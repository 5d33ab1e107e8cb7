import t from 'tap';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { ACCESS_DIRECTORY, startTestGateway, startUpstream } from '../../gateway/helpers.js';

/**
 * The gateway's pages in the browser's language (docs/i18n.md): a Chromium whose locale is German
 * sends `Accept-Language: de-DE`, sees the 403 access-denied and sign-out pages in German, and its
 * language switcher turns them Arabic, written right to left, for the rest of the visit.
 */
declare function getComputedStyle(node: unknown): { direction: string };

const skip = chromiumSkip(t, 'gateway language suite');

t.test(
  'Chromium in German sees the gateway pages in German; the switcher makes them Arabic and right to left',
  { skip, timeout: 60_000 },
  async (t) => {
    const upstream = await startUpstream(t);
    const gw = await startTestGateway(t, { upstream: upstream.url });
    // `user-1` (the session below) belongs to acme only, so this rule refuses it: the 403 page.
    await gw.configure(
      { mode: 'enforce', routes: [{ path: '/', allow: { orgs: [{ slug: 'globex' }] } }] },
      undefined,
      ACCESS_DIRECTORY,
    );
    const cookie = await gw.sessionCookie();
    const { browser } = await launchChromium(t);
    const context = await browser.newContext({ locale: 'de-DE' });
    t.teardown(() => context.close());
    await context.addCookies(
      cookie.split('; ').map((pair) => {
        const at = pair.indexOf('=');
        return { name: pair.slice(0, at), value: pair.slice(at + 1), url: gw.url };
      }),
    );
    const page = await context.newPage();
    const host = new URL(gw.url).host;

    const denied = await page.goto(`${gw.url}/app/report`);
    t.equal(denied?.status(), 403);
    t.equal(await page.getAttribute('html', 'lang'), 'de');
    t.equal(await page.getAttribute('html', 'dir'), 'ltr');
    t.equal(await page.textContent('h1'), `Kein Zugang zu ${host}`);
    t.equal(await page.title(), `Kein Zugang zu ${host}`);
    t.equal(await page.textContent('[data-field="account"]'), 'ada', 'the account, inside the German sentence');
    t.match(await page.textContent('main p'), /^Sie sind als ada angemeldet/);
    t.equal(await page.textContent('[data-action="use-another-account"]'), 'Anderes Konto verwenden');
    t.equal(await page.getAttribute('nav.lang', 'aria-label'), 'Sprache');
    t.equal(await page.getAttribute('nav.lang a[aria-current="true"]', 'lang'), 'de');

    await page.goto(`${gw.url}/_gate/signout?rd=/app`);
    t.equal(await page.textContent('h1'), 'Abmelden?');
    t.equal(await page.textContent('button[data-action="signout"]'), 'Abmelden');

    await page.click('nav.lang a[lang="ar"]');
    await page.waitForURL(`${gw.url}/_gate/signout?rd=%2Fapp`);
    t.equal(await page.getAttribute('html', 'lang'), 'ar');
    t.equal(await page.getAttribute('html', 'dir'), 'rtl');
    t.equal(await page.textContent('h1'), 'هل تريد تسجيل الخروج؟');
    t.equal(await page.locator('main').evaluate((node) => getComputedStyle(node).direction), 'rtl');
    // The layout mirrors: the button comes first on the right, the way back to its left.
    const button = (await page.locator('button[data-action="signout"]').boundingBox())!.x;
    const stay = (await page.locator('form a').boundingBox())!.x;
    t.ok(stay < button, `"stay signed in" (x=${stay}) left of the button (x=${button})`);

    const again = await page.goto(`${gw.url}/app/report`);
    t.equal(again?.status(), 403);
    t.equal(await page.getAttribute('html', 'dir'), 'rtl', 'the choice is kept over Accept-Language');
    t.equal(await page.textContent('h1'), `لا يمكنك الوصول إلى ${host}`);
    t.equal(await page.textContent('[data-action="use-another-account"]'), 'استخدم حسابًا آخر');
    t.equal(upstream.seen.length, 0, 'the app saw nothing');
  },
);
