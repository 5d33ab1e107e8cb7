import { Writable } from 'node:stream';
import { request } from 'undici';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/src/server.js';
import { createTokenClient, type TokenClient } from '../../gateway/src/token-client.js';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import type { SharedState } from '#lib/runtime/shared-state/index.js';
import { parseCookieHeader, readSessionCookies, type GateSession } from '#lib/gateway-protocol/session-cookie.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { tempDir, TEST_MASTER_KEY } from '../helpers/build.js';
import { SoftAuthenticator } from '../helpers/soft-authenticator.js';
import { startTestGateway, startUpstream, type TestGateway, type Upstream } from './helpers.js';
import { until } from '../helpers/until.js';

/**
 * The browser sign-in at the gateway against a REAL control plane on a free port: the gateway
 * is a confidential client registered with the admin token, the user signs up with a software
 * passkey over HTTP, and every redirect is followed by hand with two cookie jars (one per origin).
 */
export const ADMIN = 'gateway-signin-admin-token-0123456789abcdef0123';
export const HTML = { accept: 'text/html' };
export const POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [
    { path: '/public', public: true },
    { path: '/admin', min_assurance: 'sensitive' },
  ],
};

export class Jar {
  readonly cookies = new Map<string, string>();
  absorb(setCookie: string | string[] | undefined): void {
    for (const line of [setCookie ?? []].flat()) {
      const pair = line.split(';')[0]!;
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /max-age=0\b/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

export async function get(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers });
  const body = await res.body.text();
  return {
    status: res.statusCode,
    headers: res.headers,
    body,
    location: typeof res.headers['location'] === 'string' ? res.headers['location'] : undefined,
    setCookie: res.headers['set-cookie'] as string | string[] | undefined,
  };
}

export async function startCp(t: Tap, extra: Record<string, unknown> = {}): Promise<RunningControlPlane> {
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir: tempDir(t),
      host: '127.0.0.1',
      port: 0,
      masterKey: TEST_MASTER_KEY,
      logLevel: 'warn',
      adminToken: ADMIN,
      ...extra,
    },
  });
  const server = await startControlPlane(config, {
    logStream: new Writable({
      write(_c, _e, done) {
        done();
      },
    }),
  });
  t.teardown(() => server.close());
  return server;
}
export type Tap = Parameters<typeof tempDir>[0];

/** Signs up with a software passkey and signs in again; the jar holds the control plane's session. */
export async function passkeyUser(
  base: string,
  username: string,
): Promise<{ jar: Jar; identityId: string; authenticator: SoftAuthenticator }> {
  const jar = new Jar();
  const authenticator = new SoftAuthenticator(base);
  const post = async (path: string, body: unknown) => {
    const res = await request(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base, cookie: jar.header() },
      body: JSON.stringify(body),
    });
    jar.absorb(res.headers['set-cookie'] as string[] | undefined);
    const json = (await res.body.json()) as Record<string, any>;
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  const begin = await post('/auth/registration-options', { username });
  const created = await post('/auth/registration-verify', {
    user: username,
    response: authenticator.create(begin.options),
    signupToken: begin.signupToken,
  });
  const options = (await (await request(`${base}/auth/assertion-options`)).body.json()) as Record<string, any>;
  await post('/auth/assertion-verify', { response: authenticator.get(options.options) });
  return { jar, identityId: created.identityId, authenticator };
}

export interface World {
  cp: RunningControlPlane;
  client: { client_id: string; client_secret: string };
  gw: TestGateway;
  upstream: Upstream;
  user: { jar: Jar; identityId: string; authenticator: SoftAuthenticator };
  refreshes: { count: number };
  /** Milliseconds added to the gateway's clock. */
  clock: { offset: number };
}

export async function world(
  t: Tap,
  policy: GatewayPolicy = POLICY,
  options: {
    register?: (gatewayUrl: string) => Record<string, unknown>;
    pull?: boolean;
    state?: SharedState;
    /** Extra control-plane config (an upstream identity provider's CA, say). */
    cp?: Record<string, unknown>;
  } = {},
): Promise<World> {
  const cp = await startCp(t, options.cp);
  const port = await findFreePort();
  const gatewayUrl = `http://localhost:${port}`;
  const reg = await request(`${cp.url}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Gateway',
      redirect_uris: [`${gatewayUrl}/_gate/callback`],
      post_logout_redirect_uris: [`${gatewayUrl}/`],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email offline_access',
      token_endpoint_auth_method: 'client_secret_basic',
      ...(options.pull ? { gateway: policy } : {}),
      ...options.register?.(gatewayUrl),
    }),
  });
  const client = (await reg.body.json()) as { client_id: string; client_secret: string };
  if (reg.statusCode !== 201) throw new Error(`register: ${JSON.stringify(client)}`);
  const refreshes = { count: 0 };
  const real = createTokenClient({
    controlPlane: cp.url,
    clientId: client.client_id,
    clientSecret: client.client_secret,
  });
  // The real client, counting the refreshes that reach the control plane.
  const tokenClient: TokenClient = {
    exchangeCode: real.exchangeCode,
    refresh: (token) => {
      refreshes.count++;
      return real.refresh(token);
    },
    revoke: real.revoke!,
  };
  const clock = { offset: 0 };
  const upstream = await startUpstream(t);
  const gw = await startTestGateway(t, {
    upstream: upstream.url,
    remoteKeys: true,
    overrides: { port, controlPlane: cp.url, clientId: client.client_id, clientSecret: client.client_secret },
    deps: { tokenClient, now: () => Date.now() + clock.offset },
    ...(options.state ? { state: options.state } : {}),
  });
  if (options.pull) {
    // The signed config comes from the control plane's GET /gateway/config, as in production.
    await until("the gateway's first signed config", async () => gw.running.gateway.configHolder.current ?? undefined);
  } else {
    // The control plane's GET /gateway/config is another piece: the policy comes from the test.
    await gw.running.configPull?.stop();
    await gw.configure(policy, 1000);
  }
  const user = await passkeyUser(cp.url, `gate-${port}`);
  return { cp, client, gw, upstream, user, refreshes, clock };
}

/** From the gateway's sign-in redirect to the callback URL the control plane sends the browser to. */
export async function authorizeAt(w: World, authorizeUrl: string): Promise<URL> {
  let res = await get(authorizeUrl, { cookie: w.user.jar.header() });
  if (res.status === 200 && res.body.includes('data-action="continue"')) {
    const form = new URLSearchParams();
    for (const m of res.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      form.append(
        m[1]!,
        m[2]!
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'")
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&amp;/g, '&'),
      );
    }
    const posted = await request(`${w.cp.url}/auth/authorize`, {
      method: 'POST',
      headers: { cookie: w.user.jar.header(), origin: w.cp.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    await posted.body.dump();
    res = { ...res, status: posted.statusCode, location: posted.headers['location'] as string | undefined };
  }
  if (!res.location?.startsWith(`${w.gw.url}/_gate/callback`))
    throw new Error(`authorize answered ${res.status} ${res.location ?? res.body.slice(0, 300)}`);
  return new URL(res.location);
}

/** Anonymous navigation → sign-in → authorize → callback; returns the browser's gateway jar and the callback answer. */
export async function signIn(
  w: World,
  path = '/app/page?x=1',
): Promise<{ jar: Jar; callback: URL; loginCookie: string; landed: Awaited<ReturnType<typeof get>> }> {
  const jar = new Jar();
  // The gateway sends the browser straight to the control plane's authorize, setting its login cookie.
  const signin = await get(`${w.gw.url}${path}`, HTML);
  jar.absorb(signin.setCookie);
  const loginCookie = jar.header();
  const callback = await authorizeAt(w, signin.location!);
  const landed = await get(callback.toString(), { cookie: jar.header() });
  jar.absorb(landed.setCookie);
  return { jar, callback, loginCookie, landed };
}

export async function sessionIn(w: World, jar: Jar): Promise<GateSession> {
  const session = await readSessionCookies(parseCookieHeader(jar.header()), {
    keys: w.gw.running.gateway.cookieKeys,
    now: Date.now(),
    secure: false,
  });
  if (!session) throw new Error('no session in the jar');
  return session;
}

/** Signs out as a browser does: the confirmation page, then its form posted with the CSRF token. */
export async function signOut(w: World, jar: Jar): Promise<Awaited<ReturnType<typeof get>>> {
  const page = await get(`${w.gw.url}/_gate/signout`, { ...HTML, cookie: jar.header() });
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)?.[1];
  if (!csrf) throw new Error(`no sign-out form: ${page.status}`);
  const res = await request(`${w.gw.url}/_gate/signout`, {
    method: 'POST',
    headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf }).toString(),
  });
  const body = await res.body.text();
  return {
    status: res.statusCode,
    headers: res.headers,
    body,
    location: typeof res.headers['location'] === 'string' ? res.headers['location'] : undefined,
    setCookie: res.headers['set-cookie'] as string | string[] | undefined,
  };
}
