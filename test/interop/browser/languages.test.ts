import t from 'tap';
import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';
import { decodeQuotedPrintable, readOutbox } from '../../helpers/smtp.js';
import { until } from '../../helpers/until.js';

/**
 * Pages and mail in the person's language (issue 40, docs/i18n.md), as Debian's Chromium meets
 * them: Accept-Language de gives German pages (sign-in, account, step-up, apps, rollout, consent), ui_locales=ar
 * at the authorization endpoint gives Arabic right to left, the switcher's choice sticks, and a
 * mail follows the account's `lang`.
 */
const skip = chromiumSkip(t, 'browser languages suite');

t.test(
  'pages follow Accept-Language, ui_locales and the switcher; mail follows the account',
  { skip, timeout: 150_000 },
  async (t) => {
    const dataDir = tempDir(t);
    const config = loadControlPlaneConfig({
      env: {},
      overrides: { dataDir, host: '127.0.0.1', port: 0, masterKey: TEST_MASTER_KEY, logLevel: 'warn' },
    });
    const server: RunningControlPlane = await startControlPlane(config, {
      logStream: new Writable({
        write(_c, _e, done) {
          done();
        },
      }),
    });
    t.teardown(() => server.close());
    const { page, context, addAuthenticator } = await launchChromium(t, { expectedFailures: ['/auth/authorize'] });
    await context.setExtraHTTPHeaders({ 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' });
    await addAuthenticator();
    const lang = () => page.locator('html').getAttribute('lang');
    const dir = () => page.locator('html').getAttribute('dir');

    await page.goto(`${server.url}/auth`);
    t.equal(await lang(), 'de');
    t.equal(await page.textContent('h1'), 'Bei Keyplane anmelden');
    await page.fill('input[name="username"]', 'ada');
    await page.click('button[data-action="signup"]');
    await page.waitForURL(`${server.url}/account`, { timeout: 20_000 });
    t.equal(await lang(), 'de');
    t.equal(await page.textContent('h1'), 'Ihr Konto');

    await page.goto(`${server.url}/auth/step-up?return=/account`);
    t.equal(await page.textContent('h1'), 'Bestätigen Sie, dass Sie es sind');
    t.equal(await page.textContent('button[data-action="step-up"]'), 'Mit Passkey bestätigen');

    // The apps page, its forms and the connector form, and the rollout page: German as well.
    await page.goto(`${server.url}/apps`);
    t.equal(await lang(), 'de');
    t.equal(await page.textContent('h1'), 'Ihre Apps');
    t.equal(await page.textContent('label[for="client_name"]'), 'Name der App');
    t.equal(await page.textContent('#connectors'), 'Ein Werkzeug verbinden');
    await page.goto(`${server.url}/rollout`);
    t.equal(await lang(), 'de');
    t.match(await page.textContent('main'), /Noch kein Projekt hat ein Vertrauensprofil/, 'the rollout page is German');

    // The consent page: an app registered by this account (POST /register with the session) asks.
    const registered = await page.evaluate(async () => {
      const res = await fetch('/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({
          client_name: 'Notizen',
          redirect_uris: ['http://localhost:9/cb'],
          token_endpoint_auth_method: 'none',
          scope: 'openid',
        }),
      });
      return { status: res.status, body: (await res.json()) as { client_id?: string } };
    });
    t.equal(registered.status, 201, 'the app is registered');
    const authorize = new URLSearchParams({
      client_id: registered.body.client_id ?? '',
      redirect_uri: 'http://localhost:9/cb',
      response_type: 'code',
      scope: 'openid',
      state: 's',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    await page.goto(`${server.url}/auth/authorize?${authorize}`);
    t.equal(await lang(), 'de');
    t.equal(await page.textContent('h1'), 'Weiter zu Notizen?', 'the consent page is German');

    // The account says Spanish: its mail is Spanish although this browser asks for German.
    const saved = await page.evaluate(async () => {
      const res = await fetch('/auth/preferences', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ preferences: { lang: 'es' } }),
      });
      return res.status;
    });
    t.equal(saved, 200);
    await page.goto(`${server.url}/account`);
    t.equal(await lang(), 'es', 'the account preference beats Accept-Language');
    await page.fill('#email-new', 'ada@example.com');
    await page.click('form[data-sf-form="email-add"] button[type="submit"]');
    const mail = await until('the verification mail', async () => (await readOutbox(dataDir))[0], 10_000);
    t.match(decodeQuotedPrintable(mail), /El enlace funciona una vez/, 'the verification mail is in Spanish');

    // The switcher: a plain link; the choice is kept in kp_lang and beats the account preference.
    await page.click('nav.lang a[hreflang="fr"]');
    await page.waitForURL(/lang=fr/);
    t.equal(await lang(), 'fr');
    t.equal(await page.textContent('h1'), 'Votre compte');
    await page.goto(`${server.url}/account`);
    t.equal(await page.textContent('h1'), 'Votre compte', 'the choice sticks');
    // Saving a language on the account replaces the switcher's pick.
    await page.evaluate(async () => {
      await fetch('/auth/preferences', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ preferences: { lang: 'ja' } }),
      });
    });
    await page.goto(`${server.url}/account`);
    t.equal(await page.textContent('h1'), 'アカウント', 'the saved preference wins over the earlier switcher pick');

    // The rollout page in Arabic (the switcher's pick): right to left.
    await page.goto(`${server.url}/rollout?lang=ar`);
    t.equal(await lang(), 'ar');
    t.equal(await dir(), 'rtl');
    t.equal(await page.textContent('h1'), 'النشر');

    // ui_locales at the authorization endpoint: Arabic, right to left, also for the pages after it.
    await context.clearCookies();
    await page.goto(`${server.url}/auth/authorize?client_id=unknown&ui_locales=ar`);
    t.equal(await lang(), 'ar');
    t.equal(await dir(), 'rtl');
    await page.goto(`${server.url}/auth`);
    t.equal(await dir(), 'rtl');
    t.equal(await page.textContent('h1'), 'سجّل الدخول إلى Keyplane');
  },
);
