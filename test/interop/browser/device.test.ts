import t from 'tap';
import * as client from 'openid-client';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { passkeySignUp, refusal, register, start } from '../../helpers/openid-client.js';

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

t.test(
  'device grant in Chromium: a person the access rules leave out sees the 403 page, never the approval page; a self-declared client is marked with its registrant',
  { skip },
  async (t) => {
    const server = await start(t);
    const base = server.url;
    const owner = await passkeySignUp(base, 'acme-tv-owner');
    const asOwner = (path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: {
          cookie: owner.header(),
          origin: base,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        body: JSON.stringify(body),
      });
    t.equal((await asOwner('/auth/orgs/create', { name: 'Acme' })).status, 200);
    const device = { redirect_uris: undefined, post_logout_redirect_uris: undefined, grant_types: [DEVICE_CODE] };
    const restricted = await register(base, {
      ...device,
      client_name: 'Acme lobby screen',
      scope: 'openid profile',
      resources: [],
      token_endpoint_auth_method: 'none',
      access: { orgs: [{ slug: 'acme' }] },
    });
    const configOf = (clientId: string) =>
      client.discovery(new URL(base), clientId, undefined, client.None(), { execute: [client.allowInsecureRequests] });
    const { page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();

    const started = await client.initiateDeviceAuthorization(await configOf(restricted.client_id), { scope: 'openid' });
    const refused = refusal(client.pollDeviceAuthorizationGrant(await configOf(restricted.client_id), started));
    await page.goto(started.verification_uri_complete!);
    await page.fill('input[name="username"]', 'tv-outsider');
    const shown = page.waitForResponse(
      (r) =>
        new URL(r.url()).pathname === '/device' &&
        r.request().method() === 'GET' &&
        new URL(r.url()).searchParams.has('user_code'),
      { timeout: 20_000 },
    );
    await page.click('button[data-action="signup"]');
    t.equal((await shown).status(), 403, 'the same 403 as authorize');
    await page.waitForSelector('[data-field="admits"]', { timeout: 20_000 });
    t.match(await page.textContent('[data-field="admits"]'), /acme/);
    t.equal(await page.$('form[data-action="continue"]'), null, 'never the approval page');
    t.equal(await refused, 'access_denied', 'the device code ends access_denied');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    t.match(metrics, /keyplane_receipts_total\{kind="signin\.access_denied"\} [1-9]/, 'a receipt of the refusal');

    // A client a person registered: its name and address are theirs to type, so the page says so.
    const registration = await asOwner('/register', {
      ...device,
      client_name: 'Keyplane Official TV',
      client_uri: 'https://tv.keyplane.example',
      scope: 'openid',
      token_endpoint_auth_method: 'none',
    });
    t.equal(registration.status, 201, await registration.clone().text());
    const personal = (await registration.json()) as { client_id: string };
    const config = await configOf(personal.client_id);
    const second = await client.initiateDeviceAuthorization(config, { scope: 'openid' });
    const polling = client.pollDeviceAuthorizationGrant(config, second);
    await page.goto(second.verification_uri_complete!);
    await page.waitForSelector('form[data-action="continue"]', { timeout: 20_000 });
    t.match(await page.textContent('[data-field="self-declared"]'), /Unverified app.*tv\.keyplane\.example/);
    t.match(await page.textContent('[data-field="registered-by"]'), /acme-tv-owner/);
    await page.click('form[data-action="continue"] button[value="allow"]');
    await page.waitForSelector('[data-result="approved"]', { timeout: 20_000 });
    t.match((await polling).claims(), { aud: personal.client_id, sub: /./ });
    t.same(problems, ['403 /device'], 'no page errors but the refusal itself');
  },
);
