import t from 'tap';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../../control-plane/src/server.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { tempDir, TEST_MASTER_KEY } from '../../helpers/build.js';

/**
 * FedCM end to end in Debian's Chromium (headless, driven through CDP's FedCm domain): the IdP on
 * http://localhost:<port>, the RP on http://127.0.0.1:<port> (another site), both potentially
 * trustworthy origins, so no TLS and no feature flags are needed. The person signs up on the
 * IdP (Set-Login: logged-in), the RP page asks navigator.credentials.get for an identity
 * credential, the test picks the account in the browser's dialog, and the RP gets an ID token
 * it verifies against the JWKS.
 */
const ADMIN = 'fedcm-admin-token-0123456789abcdef0123456789';
const skip = chromiumSkip(t, 'browser FedCM suite');

const RP_PAGE = `<!doctype html><html><body><h1>RP</h1><script>
window.fedcm = async (configURL, clientId, nonce, mode) => {
  try {
    const credential = await navigator.credentials.get({ identity: { context: 'signin', mode, providers: [{ configURL, clientId, params: { nonce } }] } });
    return { token: credential.token };
  } catch (error) {
    return { failed: String(error && error.name), code: error && error.code, message: String(error && error.message) };
  }
};
</script></body></html>`;

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

t.test('FedCM in Chromium', { skip }, async (t) => {
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir: tempDir(t),
      host: '127.0.0.1',
      port: 0,
      masterKey: TEST_MASTER_KEY,
      logLevel: 'warn',
      adminToken: ADMIN,
    },
  });
  const server: RunningControlPlane = await startControlPlane(config, {
    logStream: new Writable({
      write(_c, _e, done) {
        done();
      },
    }),
  });
  t.teardown(() => server.close());
  const seen: string[] = [];
  // Every request as the IdP's socket saw it (what Chromium actually sent).
  server.app.server.prependListener('request', (request: IncomingMessage) => {
    seen.push(
      `${request.method} ${request.url!.split('?')[0]} origin=${request.headers.origin ?? '-'} dest=${request.headers['sec-fetch-dest'] ?? '-'} session=${request.headers.cookie?.includes('kp_session=') ? 'lax' : request.headers.cookie?.includes('kp_fedcm=') ? 'fedcm' : 'no'}`,
    );
  });

  const rp = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(RP_PAGE);
  });
  const rpPort = await listen(rp, '127.0.0.1');
  t.teardown(() => new Promise<void>((resolve) => rp.close(() => resolve())));
  const rpOrigin = `http://127.0.0.1:${rpPort}`;

  const reg = await fetch(`${server.url}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'FedCM RP',
      redirect_uris: [`${rpOrigin}/callback`],
      token_endpoint_auth_method: 'none',
      scope: 'openid profile',
      in_place: true,
    }),
  });
  t.equal(reg.status, 201);
  const clientId = ((await reg.json()) as { client_id: string }).client_id;

  const { page, cdp, problems, addAuthenticator } = await launchChromium(t, { expectedFailures: ['/fedcm/accounts'] });
  await addAuthenticator();

  await page.goto(`${server.url}/auth`);
  await page.fill('input[name="username"]', 'fedcm-user');
  await page.click('button[data-action="signup"]');
  await page
    .waitForURL((url) => url.pathname === '/account', { timeout: 20_000 })
    .catch((error) => {
      throw new Error(`sign-up did not finish: ${problems.join(' | ')} ${error}`);
    });

  const dialogs: string[] = [];
  await cdp.send('FedCm.enable', { disableRejectionDelay: true });
  cdp.on(
    'FedCm.dialogShown',
    (event: { dialogId: string; dialogType: string; accounts: Array<{ accountId: string }> }) => {
      dialogs.push(event.dialogType);
      if (event.dialogType === 'AccountChooser' || event.dialogType === 'AutoReauthn')
        void cdp.send('FedCm.selectAccount', { dialogId: event.dialogId, accountIndex: 0 });
      else if (event.dialogType === 'ConfirmIdpLogin')
        void cdp.send('FedCm.clickDialogButton', { dialogId: event.dialogId, dialogButton: 'ConfirmIdpLoginContinue' });
      else void cdp.send('FedCm.dismissDialog', { dialogId: event.dialogId });
    },
  );

  await page.goto(`${rpOrigin}/`);
  const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));

  /** Runs the RP's FedCM call; gives up after 20 s with what the IdP saw (a hung dialog never settles). */
  async function signIn(
    nonce: string,
    mode: 'active' | 'passive' = 'active',
  ): Promise<{ token?: string; failed?: string; message?: string }> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new Error(
              `FedCM call did not settle; dialogs: ${dialogs.join(',')}; IdP saw: ${seen.join(' | ')}; ${problems.join(' | ')}`,
            ),
          ),
        20_000,
      );
    });
    try {
      return await Promise.race([
        page.evaluate(([configURL, id, n, m]) => (globalThis as any).fedcm(configURL, id, n, m), [
          `${server.url}/fedcm/config.json`,
          clientId,
          nonce,
          mode,
        ] as const),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  await t.test(
    'the RP page receives an ID token for its client, bound to its nonce, that verifies against the JWKS',
    async (t) => {
      let result = await signIn('nonce-e2e-1');
      if (result.failed === 'NetworkError' && !seen.some((line) => line.startsWith('GET /fedcm/accounts'))) {
        // Seen once in five runs on a fresh profile: Chromium rejected before fetching accounts
        // (cause not established). Nothing was issued; ask once more.
        await cdp.send('FedCm.resetCooldown');
        result = await signIn('nonce-e2e-1');
      }
      t.ok(
        result.token,
        `a token came back (${JSON.stringify(result)} ${dialogs.join(',')} ${problems.join(' | ')} ${seen.join(' | ')})`,
      );
      const { payload } = await jwtVerify(result.token!, jwks, {
        issuer: server.url,
        audience: clientId,
        algorithms: ['ES256'],
      });
      t.match(payload, {
        nonce: 'nonce-e2e-1',
        preferred_username: 'fedcm-user',
        svc: { assurance: 'passkey', principal: { type: 'human' } },
      });
      t.same(dialogs.slice(0, 1), ['AccountChooser'], 'the browser showed its account chooser');
      const assertion = seen.find((line) => line.startsWith('POST /fedcm/assertion'));
      t.equal(
        assertion,
        `POST /fedcm/assertion origin=${rpOrigin} dest=webidentity session=fedcm`,
        'Chromium sent the RP origin, Sec-Fetch-Dest and the FedCM cookie (SameSite=None), not the Lax one',
      );
      t.ok(
        seen.some((line) => line.startsWith('GET /.well-known/web-identity')),
        'Chromium fetched the well-known file',
      );
    },
  );

  await t.test('a second sign-in with the same nonce gets no token', async (t) => {
    const result = await signIn('nonce-e2e-1');
    t.notOk(result.token);
    t.ok(result.failed, `refused in the page: ${JSON.stringify(result)}`);
  });

  await t.test('after sign-out (Set-Login: logged-out) the browser does not ask the IdP for accounts', async (t) => {
    await page.goto(`${server.url}/account`);
    await page.evaluate(() =>
      fetch('/auth/signout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).then(
        (r) => r.status,
      ),
    );
    await page.goto(`${rpOrigin}/`);
    const before = seen.filter((line) => line.startsWith('GET /fedcm/accounts')).length;
    await cdp.send('FedCm.resetCooldown');
    // Passive: an active-mode request would open login_url in a popup instead of failing.
    const result = await signIn('nonce-e2e-2', 'passive');
    t.notOk(result.token);
    t.equal(result.failed, 'NetworkError', 'logged out: rejected at once, without a dialog');
    t.equal(
      seen.filter((line) => line.startsWith('GET /fedcm/accounts')).length,
      before,
      'no accounts fetch while logged out',
    );
  });
});
