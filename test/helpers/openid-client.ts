import * as client from 'openid-client';
import type { RunningControlPlane } from '../../control-plane/src/server.js';
import type { tempDir } from './build.js';
import { startLiveControlPlane } from './live-browser.js';
import { decodeEntities } from './oidc.js';
import { SoftAuthenticator } from './soft-authenticator.js';

/**
 * The pieces an openid-client interop test needs around the library: a real control plane on a
 * free port, a passkey sign-up through the real routes (software authenticator), a registration
 * with the admin token, and a browser that follows an authorization URL with its session cookie
 * through the one-tap form.
 */
export const ADMIN = 'interop-admin-token-0123456789abcdef0123456789';
export const CALLBACK = 'http://localhost:9/callback';
export const RESOURCE = 'https://api.notes.example.com';

/** The OAuth `error` a library call was refused with (undefined when it succeeded). */
export async function refusal(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
    return undefined;
  } catch (error) {
    return (error as { error?: string }).error ?? (error as Error).name;
  }
}

export class CookieJar {
  readonly cookies = new Map<string, string>();
  absorb(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/** A control plane on a free port whose admin token is {@link ADMIN}. */
export function start(
  t: Parameters<typeof tempDir>[0],
  extra: Record<string, unknown> = {},
): Promise<RunningControlPlane> {
  return startLiveControlPlane(t, { adminToken: ADMIN, ...extra });
}

/** Signs up through the real passkey routes (with `authenticator`, to sign in with it again) and returns the browser's cookies. */
export async function passkeySignUp(
  base: string,
  username: string,
  authenticator = new SoftAuthenticator(base),
): Promise<CookieJar> {
  const jar = new CookieJar();
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        origin: base,
        ...(jar.cookies.size ? { cookie: jar.header() } : {}),
      },
      body: JSON.stringify(body),
    });
    jar.absorb(res);
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, any>>;
  };
  const begin = await post('/auth/registration-options', { username });
  await post('/auth/registration-verify', {
    user: username,
    response: authenticator.create(begin.options),
    signupToken: begin.signupToken,
  });
  // A fresh passkey sign-in (usernameless), as a returning user would.
  const options = (await (await fetch(`${base}/auth/assertion-options`)).json()) as Record<string, any>;
  await post('/auth/assertion-verify', { response: authenticator.get(options.options) });
  return jar;
}

/** openid-client's configuration for a registered confidential client (client_secret_basic, plain http allowed). */
export function configure(base: string, registered: Record<string, any>): Promise<client.Configuration> {
  return client.discovery(
    new URL(base),
    registered.client_id as string,
    registered.client_secret as string,
    client.ClientSecretBasic(registered.client_secret as string),
    { execute: [client.allowInsecureRequests] },
  );
}

export async function register(base: string, metadata: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await fetch(`${base}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Interop RP',
      redirect_uris: [CALLBACK],
      post_logout_redirect_uris: ['http://localhost:9/'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email profile offline_access',
      resources: [RESOURCE],
      ...metadata,
    }),
  });
  if (res.status !== 201) throw new Error(`register: ${await res.text()}`);
  return res.json() as Promise<Record<string, any>>;
}

/** What the browser does with the authorization URL: follows it with the session cookie, through the one-tap form. */
export async function browse(url: URL, jar: CookieJar, base: string, callback = CALLBACK): Promise<URL> {
  let res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header() } });
  if (res.status === 200) {
    const html = await res.text();
    const form = new URLSearchParams();
    for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      form.append(m[1]!, decodeEntities(m[2]!));
    }
    res = await fetch(`${base}/auth/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
  }
  const location = res.headers.get('location');
  if (!location || !location.startsWith(callback))
    throw new Error(`authorize answered ${res.status} ${location ?? (await res.text())}`);
  return new URL(location);
}
