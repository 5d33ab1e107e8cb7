import t from 'tap';
import { createServer, type Server } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import {
  createClient,
  keyplaneExpress,
  keyplaneFastify,
  type KeyplaneClient,
  type Session,
} from '../../sdk/src/index.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { LiveBrowser, registerLiveClient, startLiveControlPlane } from '../helpers/live-browser.js';

/**
 * The SDK's middleware in a real fastify and a real Express app, each on its own port, against a
 * real control plane: sign-in by redirect, the session in encrypted cookies, API callers told
 * 401, step-up for a sensitive route, concurrent refreshes spending the refresh token once, and
 * sign-out that revokes it.
 */
type Teardown = Parameters<typeof startLiveControlPlane>[0];
const SECRETS = ['sdk-test-cookie-secret-0123456789abcdef'];

interface AppUnderTest {
  base: string;
  client: KeyplaneClient;
}

function describe(session: Session | null) {
  return { sub: session?.sub, assurance: session?.assurance, principal: session?.principal?.type };
}

interface AppOptions {
  refreshLeewaySeconds?: number;
  dpop?: boolean;
}

async function fastifyApp(t: Teardown, issuer: string, { dpop, ...options }: AppOptions = {}): Promise<AppUnderTest> {
  const port = await findFreePort();
  const base = `http://127.0.0.1:${port}`;
  const registered = await registerLiveClient(issuer, {
    redirect_uris: [`${base}/callback`],
    token_endpoint_auth_method: 'client_secret_basic',
  });
  const client = createClient({
    issuer,
    clientId: registered.client_id,
    clientSecret: registered.client_secret,
    redirectUri: `${base}/callback`,
    jwksCooldownMs: 0,
    ...(dpop ? { dpop } : {}),
  });
  const kp = keyplaneFastify(client, { cookieSecrets: SECRETS, ...options });
  const app = Fastify();
  await app.register(kp.plugin);
  app.get('/', async (request) => ({ page: 'home', ...describe(request.keyplane) }));
  app.get('/me', { preHandler: kp.requireAuth }, async (request) => client.userinfo(request.keyplane!));
  app.get('/private', { preHandler: kp.requireAuth }, async (request) => ({
    page: 'private',
    ...describe(request.keyplane),
  }));
  app.get('/admin', { preHandler: kp.requireAssurance('sensitive') }, async (request) => ({
    page: 'admin',
    ...describe(request.keyplane),
  }));
  await app.listen({ port, host: '127.0.0.1' });
  t.teardown(() => app.close());
  return { base, client };
}

async function expressApp(t: Teardown, issuer: string, { dpop, ...options }: AppOptions = {}): Promise<AppUnderTest> {
  const port = await findFreePort();
  const base = `http://127.0.0.1:${port}`;
  const registered = await registerLiveClient(issuer, {
    redirect_uris: [`${base}/callback`],
    token_endpoint_auth_method: 'client_secret_basic',
  });
  const client = createClient({
    issuer,
    clientId: registered.client_id,
    clientSecret: registered.client_secret,
    redirectUri: `${base}/callback`,
    jwksCooldownMs: 0,
    ...(dpop ? { dpop } : {}),
  });
  const kp = keyplaneExpress(client, { cookieSecrets: SECRETS, ...options });
  const app = express();
  app.use(kp.middleware);
  app.get('/', (req, res) => {
    res.json({ page: 'home', ...describe((req as { keyplane?: Session | null }).keyplane ?? null) });
  });
  app.get('/me', kp.requireAuth, (req, res, next) => {
    client.userinfo((req as { keyplane?: Session }).keyplane!).then((info) => res.json(info), next);
  });
  app.get('/private', kp.requireAuth, (req, res) => {
    res.json({ page: 'private', ...describe((req as { keyplane?: Session | null }).keyplane ?? null) });
  });
  app.get('/admin', kp.requireAssurance('sensitive'), (req, res) => {
    res.json({ page: 'admin', ...describe((req as { keyplane?: Session | null }).keyplane ?? null) });
  });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return { base, client };
}

const frameworks = { fastify: fastifyApp, express: expressApp };

for (const [name, start] of Object.entries(frameworks)) {
  t.test(
    `${name}: a page load signs in by redirect and lands back; API callers get 401; the step-up route asks for sensitive`,
    async (t) => {
      const server = await startLiveControlPlane(t);
      const { base } = await start(t, server.url);
      const browser = new LiveBrowser(server.url);
      await browser.signUp(`${name}-alice`);

      const api = await browser.request(`${base}/private`, { headers: { accept: 'application/json' } });
      t.equal(api.status, 401);
      t.match(JSON.parse(api.body), { ok: false, reason: 'unauthorized' });

      const landed = await browser.navigate(`${base}/private`);
      t.equal(landed.url, `${base}/private`, 'back where the user started');
      t.match(JSON.parse(landed.body), { page: 'private', assurance: 'passkey', principal: 'human' });
      const cookies = [...browser.cookies(base).keys()];
      t.ok(
        cookies.some((c) => c.startsWith('kp_sdk')),
        'the session is an app cookie',
      );
      t.notOk(cookies.includes('kp_sdk_login'), 'the pending sign-in is gone');
      t.notOk(
        [...browser.cookies(base).values()].some((v) => v.split('.').length === 3 && !v.startsWith('eyJhbGciOiJkaXIi')),
        'no plain token in a cookie',
      );

      const weak = await browser.request(`${base}/admin`, { headers: { accept: 'application/json' } });
      t.equal(weak.status, 401);
      t.match(weak.headers.get('www-authenticate'), /error="insufficient_user_authentication", acr_values="sensitive"/);
      const redirect = await browser.request(`${base}/admin`);
      t.equal(redirect.headers.get('location'), '/login?return=%2Fadmin&acr=sensitive');
      const toIssuer = await browser.request(`${base}/login?return=%2Fadmin&acr=sensitive`);
      const authorize = new URL(toIssuer.headers.get('location')!);
      t.equal(authorize.searchParams.get('acr_values'), 'sensitive');
      t.equal(authorize.searchParams.get('max_age'), '0');
      const admin = await browser.navigate(authorize.href);
      t.equal(admin.url, `${base}/admin`);
      t.match(JSON.parse(admin.body), { page: 'admin', assurance: 'sensitive' });
    },
  );

  t.test(
    `${name}: with DPoP nonces and rotated keys, concurrent requests with a due refresh spend the refresh token once; sign-out needs the app's origin and revokes`,
    async (t) => {
      const server = await startLiveControlPlane(t, { 'oidc.dpopNonce': true });
      // A leeway longer than the access token's life: every request finds the session due for refresh.
      const { base } = await start(t, server.url, { refreshLeewaySeconds: 3600, dpop: true });
      const browser = new LiveBrowser(server.url);
      await browser.signUp(`${name}-bob`);
      await browser.navigate(`${base}/private`);
      const me = await browser.request(`${base}/me`, { headers: { accept: 'application/json' } });
      t.equal(me.status, 200, 'userinfo with the DPoP-bound token, after a nonce round');
      t.match(JSON.parse(me.body), { sub: /^usr_/ });
      // Two rotations: the refreshed ID tokens are signed by a key the app has never seen.
      await server.services.keys.rotate();
      await server.services.keys.rotate();
      let refreshed = 0;
      let revoked = 0;
      server.services.events.subscribe(async (_tx, event) => {
        if (event.type === 'token.refreshed') refreshed++;
        if (event.type === 'token.family_revoked') revoked++;
        return undefined;
      });
      const cookie = browser.cookieHeader(base);
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => fetch(`${base}/private`, { headers: { cookie, accept: 'application/json' } })),
      );
      t.same(
        answers.map((a) => a.status),
        Array(10).fill(200),
      );
      t.equal(refreshed, 1, 'one refresh for ten concurrent requests');
      t.ok(
        answers.every((a) => a.headers.getSetCookie().some((c) => c.startsWith('kp_sdk'))),
        'every answer renewed the session cookie',
      );
      t.equal(revoked, 0);
      const stale = await browser.request(`${base}/private`, { headers: { accept: 'application/json' } });
      t.equal(stale.status, 200, 'a late request with the old cookie gets the remembered refresh');
      t.equal(refreshed, 1);
      // The browser now holds a renewed cookie; its next refresh spends the rotated token.
      const next = await browser.request(`${base}/private`, { headers: { accept: 'application/json' } });
      t.equal(next.status, 200);
      t.equal(refreshed, 2);
      t.equal(revoked, 0, 'no refresh token was ever used twice');

      const foreign = await browser.request(`${base}/logout`, {
        method: 'POST',
        headers: { origin: 'https://evil.example' },
      });
      t.equal(foreign.status, 403);
      t.match(JSON.parse(foreign.body), { reason: 'origin_mismatch' });
      const out = await browser.request(`${base}/logout`, { method: 'POST', headers: { origin: base } });
      t.equal(out.status, 303);
      t.match(out.headers.get('location'), new RegExp(`^${server.url}/auth/logout\\?`));
      t.equal(revoked, 1, 'the refresh token was revoked at the issuer');
      const after = await browser.request(`${base}/private`, { headers: { accept: 'application/json' } });
      t.equal(after.status, 401, 'signed out here');
    },
  );
}

t.test('a forged, replayed or unexpected callback signs nobody in', async (t) => {
  const server = await startLiveControlPlane(t);
  const { base } = await fastifyApp(t, server.url);
  const browser = new LiveBrowser(server.url);
  const stray = await browser.request(`${base}/callback?code=x&state=y&iss=${encodeURIComponent(server.url)}`);
  t.equal(stray.status, 400);
  t.match(JSON.parse(stray.body), { ok: false, reason: 'state_mismatch' });
  await browser.signUp('mallory');
  const toIssuer = await browser.request(`${base}/login?return=/private`);
  const authorize = new URL(toIssuer.headers.get('location')!);
  const forged = await browser.request(
    `${base}/callback?code=forged&state=${authorize.searchParams.get('state')}&iss=${encodeURIComponent(server.url)}`,
  );
  t.equal(forged.status, 400);
  t.match(JSON.parse(forged.body), { reason: 'invalid_grant' });
  const denied = await browser.request(
    `${base}/callback?error=access_denied&state=x&iss=${encodeURIComponent(server.url)}`,
  );
  t.equal(denied.status, 400, 'no pending sign-in any more: the first callback consumed it');
  const home = await browser.request(`${base}/`, { headers: { accept: 'application/json' } });
  t.match(JSON.parse(home.body), { page: 'home', sub: undefined });
  t.equal(safeLogin(await browser.request(`${base}/login?return=//evil.example`)), true);

  function safeLogin(page: { headers: Headers }): boolean {
    return new URL(page.headers.get('location')!).origin === server.url;
  }
});
