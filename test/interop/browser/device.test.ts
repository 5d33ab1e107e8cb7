import t from 'tap';
import * as client from 'openid-client';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { refusal, register, start } from '../../helpers/openid-client.js';

/**
 * A person approves a device code in Chromium with a passkey (CDP virtual authenticator): the
 * device is openid-client polling; the person follows verification_uri_complete, signs up on the
 * sign-in page, lands back on the consent page with the code shown, and approves. A second code,
 * typed into the verification page's form, is declined.
 */
const skip = chromiumSkip(t, 'browser device-grant suite');
const DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';

t.test(
  'device grant in Chromium: follow the link, sign in with a passkey, approve; type a code, decline',
  { skip },
  async (t) => {
    const server = await start(t);
    const base = server.url;
    const registered = await register(base, {
      client_name: 'TV app',
      redirect_uris: undefined,
      post_logout_redirect_uris: undefined,
      grant_types: [DEVICE_CODE],
      scope: 'openid profile',
      resources: [],
      token_endpoint_auth_method: 'none',
    });
    const config = await client.discovery(new URL(base), registered.client_id, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    const { page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();

    const started = await client.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    const polling = client.pollDeviceAuthorizationGrant(config, started);
    await page.goto(started.verification_uri_complete!);
    t.equal(new URL(page.url()).pathname, '/auth', 'no session: the sign-in page first');
    await page.fill('input[name="username"]', 'tv-ivan');
    await page.click('button[data-action="signup"]');
    await page.waitForSelector('form[data-action="continue"]', { timeout: 20_000 }).catch((error) => {
      throw new Error(`no consent page: ${page.url()} ${problems.join(' | ')} ${error}`);
    });
    t.match(await page.textContent('h1'), /Continue to TV app/);
    t.equal(await page.textContent('[data-field="user_code"]'), started.user_code, 'the code to compare with the TV');
    await page.click('form[data-action="continue"] button[value="allow"]');
    await page.waitForSelector('[data-result="approved"]', { timeout: 20_000 });
    const tokens = await polling;
    t.match(tokens.claims(), { aud: registered.client_id, preferred_username: 'tv-ivan', acr: 'passkey' });

    const second = await client.initiateDeviceAuthorization(config, { scope: 'openid' });
    const refused = refusal(client.pollDeviceAuthorizationGrant(config, second));
    await page.goto(second.verification_uri);
    await page.fill('input[name="user_code"]', second.user_code.toLowerCase());
    await page.click('form[data-action="device-code"] button[type="submit"]');
    await page.waitForSelector('form[data-action="continue"]', { timeout: 20_000 }).catch(async (error) => {
      throw new Error(
        `no consent page: ${page.url()} ${(await page.content()).slice(0, 1500)} ${problems.join(' | ')} ${error}`,
      );
    });
    await page.click('form[data-action="continue"] button[value="deny"]');
    await page.waitForSelector('[data-result="denied"]', { timeout: 20_000 });
    t.equal(await refused, 'access_denied');
    t.same(problems, [], 'no page errors');
  },
);
