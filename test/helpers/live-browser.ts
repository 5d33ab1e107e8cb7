import { Writable } from 'node:stream';
import { loadControlPlaneConfig } from '#config/load.js';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/src/server.js';
import { tempDir, TEST_MASTER_KEY } from './build.js';
import { SoftAuthenticator } from './soft-authenticator.js';

/**
 * A scripted browser for real-HTTP suites: cookies kept per host (as browsers do: ports share
 * them), redirects followed by hand, the one-tap consent form submitted and a step-up answered
 * with its software authenticator, like a person clicking through.
 */
export const LIVE_ADMIN = 'live-admin-token-0123456789abcdef0123456789';

interface Tap {
  teardown(fn: () => unknown): void;
}

export async function startLiveControlPlane(t: Tap, extra: Record<string, unknown> = {}): Promise<RunningControlPlane> {
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir: tempDir(t),
      host: '127.0.0.1',
      port: 0,
      masterKey: TEST_MASTER_KEY,
      logLevel: 'warn',
      adminToken: LIVE_ADMIN,
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

/** Registers a client with the admin token over HTTP. */
export async function registerLiveClient(
  issuer: string,
  metadata: Record<string, unknown>,
): Promise<Record<string, any>> {
  const res = await fetch(`${issuer}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${LIVE_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Live RP',
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email profile offline_access',
      ...metadata,
    }),
  });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, any>>;
}

export interface Page {
  status: number;
  url: string;
  headers: Headers;
  body: string;
}

export class LiveBrowser {
  private readonly jars = new Map<string, Map<string, string>>();
  readonly authenticator: SoftAuthenticator;

  constructor(readonly issuer: string) {
    this.authenticator = new SoftAuthenticator(issuer);
  }

  cookies(url: string): Map<string, string> {
    const host = new URL(url).hostname;
    let jar = this.jars.get(host);
    if (!jar) this.jars.set(host, (jar = new Map()));
    return jar;
  }

  cookieHeader(url: string): string {
    return [...this.cookies(url)].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  /** One request, cookies in and out, no redirects followed. */
  async request(
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string } = {},
  ): Promise<Page> {
    const headers: Record<string, string> = { accept: 'text/html', ...init.headers };
    const cookie = this.cookieHeader(url);
    if (cookie) headers.cookie = cookie;
    const res = await fetch(url, {
      method: init.method ?? 'GET',
      headers,
      redirect: 'manual',
      ...(init.body !== undefined ? { body: init.body } : {}),
    });
    const jar = this.cookies(url);
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return { status: res.status, url, headers: res.headers, body: await res.text() };
  }

  async postJson(url: string, body: unknown): Promise<Record<string, any>> {
    const page = await this.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', origin: new URL(url).origin },
      body: JSON.stringify(body),
    });
    if (page.status !== 200) throw new Error(`${url}: ${page.status} ${page.body}`);
    return JSON.parse(page.body) as Record<string, any>;
  }

  /** Signs up at the issuer with a new passkey; the session cookie stays in this browser. */
  async signUp(username: string): Promise<void> {
    const begin = await this.postJson(`${this.issuer}/auth/registration-options`, { username });
    await this.postJson(`${this.issuer}/auth/registration-verify`, {
      user: username,
      response: this.authenticator.create(begin.options),
      signupToken: begin.signupToken,
    });
  }

  /**
   * Follows a navigation to its end: redirects, the one-tap form, a step-up on the issuer. With
   * `stopAt`, the first URL that starts with it is answered unvisited (status 0): a callback of
   * an app that is not listening.
   */
  async navigate(start: string, options: { stopAt?: string; limit?: number } = {}): Promise<Page> {
    let url = start;
    const limit = options.limit ?? 12;
    for (let hop = 0; hop < limit; hop++) {
      if (options.stopAt && url.startsWith(options.stopAt)) return { status: 0, url, headers: new Headers(), body: '' };
      const page = await this.request(url);
      const location = page.headers.get('location');
      if (page.status >= 300 && page.status < 400 && location) {
        url = new URL(location, url).href;
        continue;
      }
      const here = new URL(url);
      if (here.origin === this.issuer && here.pathname === '/auth/step-up') {
        const options = await this.postJson(`${this.issuer}/auth/step-up/options`, {});
        await this.postJson(`${this.issuer}/auth/step-up/verify`, {
          response: this.authenticator.get(options.options),
        });
        url = new URL(here.searchParams.get('return')!, this.issuer).href;
        continue;
      }
      if (here.origin === this.issuer && page.status === 200 && page.body.includes('data-action="continue"')) {
        const form = new URLSearchParams();
        for (const m of page.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
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
        const posted = await this.request(`${this.issuer}/auth/authorize`, {
          method: 'POST',
          headers: { origin: this.issuer, 'content-type': 'application/x-www-form-urlencoded' },
          body: form.toString(),
        });
        const next = posted.headers.get('location');
        if (!next) throw new Error(`the one-tap form answered ${posted.status} ${posted.body.slice(0, 200)}`);
        url = new URL(next, this.issuer).href;
        continue;
      }
      return page;
    }
    throw new Error(`more than ${limit} hops from ${start}`);
  }
}
