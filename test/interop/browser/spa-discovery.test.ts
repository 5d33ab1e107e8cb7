import t from 'tap';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { codeBlocksUnder } from '../../helpers/doc-blocks.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { registerLiveClient, startLiveControlPlane } from '../../helpers/live-browser.js';

/**
 * A single-page app on its own origin, written the way oidc-client-ts's README says: configured
 * with the issuer alone, it discovers the provider (OIDC Discovery, then the RFC 8414 copy), reads
 * the JWKS, and signs a new person in with the code flow and PKCE, all from the browser. Each of
 * those reads is a cross-origin fetch that works only because the public documents answer CORS.
 */
const skip = chromiumSkip(t, 'oidc-client-ts discovery suite');

const require = createRequire(import.meta.url);
// The package exports only its module entry; its browser bundle sits in dist/browser beside it.
const LIBRARY = readFileSync(
  join(dirname(require.resolve('oidc-client-ts')), '..', 'browser', 'oidc-client-ts.min.js'),
  'utf8',
);

/** The guide's snippet (docs/oidc.md §9.1) as written, with this run's issuer, client and origin. */
const GUIDE_SNIPPET = codeBlocksUnder('docs/oidc.md', '9.1 Browser-based clients (CORS)').find((block) =>
  block.text.includes('new oidc.UserManager'),
)!.text;

function spaPage(issuer: string, clientId: string, origin: string): string {
  const manager = GUIDE_SNIPPET.replaceAll('https://id.example.com', issuer)
    .replaceAll('YOUR_CLIENT_ID', clientId)
    .replaceAll('https://app.example.com', origin);
  const settings = JSON.stringify({ authority: issuer, client_id: clientId, redirect_uri: `${origin}/callback` });
  return `<!doctype html><html lang="en"><head><title>SPA</title></head><body><pre id="status">loading</pre>
<script src="/oidc-client-ts.js"></script><script>
const status = (text) => { document.getElementById('status').textContent = text; };
${manager}
window.signIn = () => manager.signinRedirect();
window.discover = async () => {
  const metadata = await manager.metadataService.getMetadata();
  const keys = await manager.metadataService.getSigningKeys();
  const rfc8414 = await new oidc.MetadataService(new oidc.OidcClientSettingsStore({
    ...${settings},
    metadataUrl: ${JSON.stringify(`${issuer}/.well-known/oauth-authorization-server`)},
  })).getMetadata();
  return { issuer: metadata.issuer, tokenEndpoint: metadata.token_endpoint, keys: keys.length, rfc8414: rfc8414.issuer };
};
if (location.pathname === '/callback')
  manager.signinRedirectCallback().then(
    (user) => status('signed in as ' + user.profile.preferred_username),
    (error) => status('failed: ' + error.message),
  );
else status('ready');
</script></body></html>`;
}

t.test('oidc-client-ts in Chromium, configured only with the issuer', { skip }, async (t) => {
  const server = await startLiveControlPlane(t);
  let page = '';
  const spa = createServer((request, response) => {
    if (request.url === '/oidc-client-ts.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' });
      response.end(LIBRARY);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(page);
  });
  await new Promise<void>((resolve) => spa.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => spa.close(() => resolve())));
  // localhost and the issuer's 127.0.0.1 are different origins, so every call below is cross-origin.
  const origin = `http://localhost:${(spa.address() as AddressInfo).port}`;
  t.not(new URL(server.url).origin, origin);
  const client = await registerLiveClient(server.url, {
    client_name: 'Single-page app',
    redirect_uris: [`${origin}/callback`],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code'],
    scope: 'openid profile',
  });
  page = spaPage(server.url, client['client_id'] as string, origin);

  const browser = await launchChromium(t);
  await browser.addAuthenticator();
  await browser.page.goto(`${origin}/`);
  await browser.page.waitForFunction(
    () => (globalThis as any).document.getElementById('status')?.textContent === 'ready',
  );

  await t.test('discovery, its RFC 8414 copy and the JWKS are read from the app origin', async (t) => {
    const found = await browser.page.evaluate(() => (globalThis as any).discover());
    t.same(found, {
      issuer: server.url,
      tokenEndpoint: `${server.url}/auth/token`,
      keys: found.keys,
      rfc8414: server.url,
    });
    t.ok(found.keys >= 1, 'the signing keys came back');
  });

  await t.test('the code flow with PKCE signs a new person in and back into the app', async (t) => {
    // signinRedirect navigates away, so its promise is left behind with the page.
    await browser.page.evaluate(() => {
      void (globalThis as any).signIn();
    });
    await browser.page.waitForURL((url) => url.pathname === '/auth', { timeout: 30_000 });
    await browser.page.fill('input[name="username"]', 'spa-person');
    await browser.page.click('button[data-action="signup"]');
    await browser.page.waitForSelector('form[data-action="continue"]', { timeout: 30_000 });
    await Promise.all([
      browser.page.waitForURL((url) => url.origin === origin && url.pathname === '/callback', { timeout: 30_000 }),
      browser.page.click('form[data-action="continue"] button[value="allow"]'),
    ]);
    await browser.page
      .waitForFunction(
        () => /^(signed in|failed)/.test((globalThis as any).document.getElementById('status')?.textContent ?? ''),
        null,
        {
          timeout: 30_000,
        },
      )
      .catch((error) => {
        throw new Error(`${error} ${browser.problems.join(' | ')}`);
      });
    t.equal(await browser.page.textContent('#status'), 'signed in as spa-person');
  });
});
