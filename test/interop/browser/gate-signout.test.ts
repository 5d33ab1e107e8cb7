import t from 'tap';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { startTestGateway } from '../../gateway/helpers.js';

/** The gateway's sign-out page in Chromium: styled like Keyplane's pages, under its strict CSP. */
declare function getComputedStyle(node: unknown): { fontFamily: string; paddingTop: string; backgroundColor: string };

const skip = chromiumSkip(t, 'browser gateway sign-out suite');

t.test('/_gate/signout is a styled page whose inline style its CSP allows', { skip, timeout: 60_000 }, async (t) => {
  const gw = await startTestGateway(t, { policy: { mode: 'enforce', routes: [{ path: '/' }] } });
  const cookie = await gw.sessionCookie({ idToken: 'id.token.value' });
  const { context, page, problems } = await launchChromium(t);
  await context.addCookies(
    cookie.split('; ').map((pair) => {
      const at = pair.indexOf('=');
      return { name: pair.slice(0, at), value: pair.slice(at + 1), url: gw.url };
    }),
  );
  const response = await page.goto(`${gw.url}/_gate/signout?rd=/later`);
  t.equal(response?.status(), 200);
  t.match(response?.headers()['content-security-policy'], /style-src 'sha256-[A-Za-z0-9+/=]+'/);
  const font = await page.locator('body').evaluate((node) => getComputedStyle(node).fontFamily);
  t.match(font, /system-ui/, `not the browser's default serif: ${font}`);
  const button = page.locator('button[data-action="signout"]');
  t.not(
    await button.evaluate((node) => getComputedStyle(node).paddingTop),
    '1px',
    'a real button, not a tiny default one',
  );
  t.equal(await page.getAttribute('a', 'href'), '/later', 'a way back without signing out');
  t.same(problems, [], 'no CSP violation: the inline style is allowed by its hash');
});
