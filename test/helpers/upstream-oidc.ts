import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';
import { Agent, request } from 'undici';
import { makeTestCa, startHttpsServer, type TestCa } from './tls.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

/**
 * node-oidc-provider as the upstream identity provider of a connection: https with a throw-away
 * CA (trusted by the control plane through `fetch.caFile`), its own login and consent pages
 * (devInteractions: any login name, any password), and clients added while the test runs,
 * since a connection's redirect URI is known only once the connection exists.
 */
export interface UpstreamOidc {
  issuer: string;
  tls: TestCa;
  /** Registers (or replaces) a client of the upstream. */
  addClient(metadata: Record<string, unknown>): void;
  /** Every request the upstream received, as `METHOD path`. */
  requests: string[];
  /** Claims added to an account's (by login name), such as `tid` or `hd` of another tenant. */
  extraClaims: Map<string, Record<string, unknown>>;
  /** Signs a JWT with the upstream's own key (RS256, its `kid`): what the upstream itself cannot be made to send. */
  sign(claims: JWTPayload, header?: { typ?: string }): Promise<string>;
  /** A person's browser at the upstream, driven over HTTP (its login and consent forms, its logout page). */
  browser(): UpstreamBrowser;
  /**
   * Replaces the ID token of the next token responses with what this returns for its claims
   * (a bad signature, another audience…); unset it to stop.
   */
  tamperIdToken: ((claims: JWTPayload) => Promise<string>) | undefined;
}

/** Holds back the token endpoint's answer and sends it with the ID token `replace` makes instead. */
function rewriteIdToken(res: ServerResponse, replace: (claims: JWTPayload) => Promise<string>): void {
  const end = res.end.bind(res) as (body?: unknown) => ServerResponse;
  res.end = ((body?: unknown) => {
    void (async () => {
      const answer = JSON.parse(String(body)) as { id_token?: string };
      if (answer.id_token !== undefined) answer.id_token = await replace(decodeJwt(answer.id_token));
      const text = JSON.stringify(answer);
      res.setHeader('content-length', Buffer.byteLength(text));
      end(text);
    })();
    return res;
  }) as ServerResponse['end'];
}

/** One person's cookies at the upstream and the pages they go through, without a browser. */
export interface UpstreamBrowser {
  /** From the upstream's authorization URL to where it sends the browser back (signing in as `login`). */
  signIn(authorizationUrl: string, login: string): Promise<string>;
  /** The upstream's end-session page (a URL with or without id_token_hint), confirmed; where it sends the browser then. */
  logOut(endSessionUrl: string): Promise<string | undefined>;
}

/** The account a login name is: an address-like name is also its e-mail and its UPN (`preferred_username`). */
function claimsOf(accountId: string): Record<string, unknown> {
  return {
    sub: accountId,
    ...(accountId.includes('@') ? { email: accountId, email_verified: true, preferred_username: accountId } : {}),
    name: `Upstream ${accountId.split('@')[0]}`,
  };
}

/** What the suites use of oidc-provider's adapter payloads and provider (it ships no types). */
type AdapterPayload = Record<string, unknown> & {
  userCode?: string;
  uid?: string;
  grantId?: string;
  consumed?: number;
};
interface UpstreamProvider {
  proxy: boolean;
  callback(): (req: IncomingMessage, res: ServerResponse) => unknown;
}
const ProviderClass = Provider as unknown as new (issuer: string, config: Record<string, unknown>) => UpstreamProvider;

/** Unescapes the HTML attribute values node-oidc-provider writes. */
const unescape = (value: string) =>
  value
    .replace(/&#x2F;/g, '/')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');

function upstreamBrowser(issuer: string, tls: TestCa): UpstreamBrowser {
  const dispatcher = new Agent({ connect: { ca: tls.ca } });
  const cookies = new Map<string, string>();
  const send = async (url: string, form?: Record<string, string>) => {
    const res = await request(url, {
      method: form ? 'POST' : 'GET',
      dispatcher,
      headers: {
        cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { body: new URLSearchParams(form).toString() } : {}),
    });
    for (const line of [res.headers['set-cookie'] ?? []].flat()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const body = await res.body.text();
    const location = res.headers['location'];
    return {
      status: res.statusCode,
      body,
      location: typeof location === 'string' ? new URL(location, url).href : undefined,
    };
  };
  /** Follows the upstream's redirects and answers its forms until the browser is sent elsewhere. */
  const walk = async (start: string, answer: (body: string, url: string) => Record<string, string> | null) => {
    let url = start;
    let page = await send(url);
    for (let step = 0; step < 12; step++) {
      if (page.location !== undefined) {
        if (!page.location.startsWith(issuer)) return page.location;
        url = page.location;
        page = await send(url);
        continue;
      }
      const action = /<form[^>]*action="([^"]+)"/.exec(page.body)?.[1];
      const form = answer(page.body, url);
      if (action === undefined || form === null) return undefined;
      page = await send(new URL(unescape(action), url).href, form);
    }
    throw new Error('the upstream never sent the browser back');
  };
  return {
    signIn: async (authorizationUrl, login) => {
      const back = await walk(authorizationUrl, (body): Record<string, string> | null =>
        body.includes('name="login"')
          ? { prompt: 'login', login, password: 'any' }
          : body.includes('value="consent"')
            ? { prompt: 'consent' }
            : null,
      );
      if (back === undefined) throw new Error('the upstream did not send the browser back');
      return back;
    },
    logOut: (endSessionUrl) =>
      walk(endSessionUrl, (body) => {
        const xsrf = /name="xsrf" value="([^"]+)"/.exec(body)?.[1];
        return xsrf === undefined ? null : { xsrf: unescape(xsrf), logout: 'yes' };
      }),
  };
}

export async function startUpstreamOidc(t: Tap): Promise<UpstreamOidc> {
  const tls = makeTestCa(t);
  const clients = new Map<string, AdapterPayload>();
  const stores = new Map<string, Map<string, AdapterPayload>>();
  // A small adapter: clients from the map above, everything else in memory (one-time use kept).
  class TestAdapter {
    private readonly store: Map<string, AdapterPayload>;
    constructor(private readonly model: string) {
      let store = stores.get(model);
      if (!store) stores.set(model, (store = new Map()));
      this.store = store;
    }
    async upsert(id: string, payload: AdapterPayload): Promise<void> {
      this.store.set(id, payload);
    }
    async find(id: string): Promise<AdapterPayload | undefined> {
      return this.model === 'Client' ? clients.get(id) : this.store.get(id);
    }
    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return [...this.store.values()].find((p) => p.userCode === userCode);
    }
    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return [...this.store.values()].find((p) => p.uid === uid);
    }
    async consume(id: string): Promise<void> {
      const payload = this.store.get(id);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      this.store.delete(id);
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      for (const [id, p] of this.store) if (p.grantId === grantId) this.store.delete(id);
    }
  }
  const handler: { serve?: ReturnType<UpstreamProvider['callback']> } = {};
  const tamper: { idToken?: UpstreamOidc['tamperIdToken'] } = {};
  const server = await startHttpsServer(t, tls, (req, res) => {
    if (tamper.idToken && req.method === 'POST' && req.url === '/token') rewriteIdToken(res, tamper.idToken);
    if (handler.serve) void handler.serve(req, res);
    else res.writeHead(503).end();
  });
  const issuer = server.origin;
  const extraClaims = new Map<string, Record<string, unknown>>();
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingJwk = { ...(await exportJWK(privateKey)), kid: 'upstream-test-key', alg: 'RS256', use: 'sig' };
  const provider = new ProviderClass(issuer, {
    adapter: TestAdapter,
    findAccount: async (_ctx: unknown, accountId: string) => ({
      accountId,
      claims: async () => ({ ...claimsOf(accountId), ...extraClaims.get(accountId) }),
    }),
    jwks: { keys: [signingJwk] },
    claims: {
      openid: ['sub', 'tid', 'hd'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
    },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true }, backchannelLogout: { enabled: true } },
    // Its back-channel logout posts to a control plane on loopback, which its SSRF dispatcher refuses.
    fetch: (url: string, options: RequestInit & { dispatcher?: unknown }) => {
      const { dispatcher: _ssrfGuard, ...rest } = options;
      return globalThis.fetch(url, rest);
    },
    cookies: { keys: ['upstream-test-cookie-key'] },
    clientAuthMethods: ['client_secret_basic', 'private_key_jwt'],
  });
  // oidc-provider sits behind nothing here; it still must not think the request was plain http.
  provider.proxy = false;
  handler.serve = provider.callback();
  return {
    issuer,
    tls,
    requests: server.requests,
    extraClaims,
    sign: (claims, header = {}) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: signingJwk.kid, ...header }).sign(privateKey),
    browser: () => upstreamBrowser(issuer, tls),
    get tamperIdToken() {
      return tamper.idToken;
    },
    set tamperIdToken(replace) {
      tamper.idToken = replace;
    },
    addClient: (metadata) => {
      clients.set(metadata.client_id as string, {
        grant_types: ['authorization_code'],
        response_types: ['code'],
        ...metadata,
      });
    },
  };
}

/**
 * Keyplane's side of starting a sign-in through a connection, as the sign-in page does it: home-realm
 * discovery for the address, then its start link. Returns the browser's binding cookie (`name=value`)
 * and the upstream's authorization URL the start sent it to.
 */
export async function startAtKeyplane(
  base: string,
  email: string,
): Promise<{ cookie: string; authorizationUrl: string }> {
  const discovered = await fetch(`${base}/auth/discover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email }),
  });
  const cookie = discovered.headers
    .getSetCookie()
    .map((line) => line.split(';')[0]!)
    .join('; ');
  const { start } = (await discovered.json()) as { start: string };
  const started = await fetch(`${base}${start}`, { redirect: 'manual', headers: { cookie } });
  const authorizationUrl = started.headers.get('location');
  if (started.status !== 303 || authorizationUrl === null) throw new Error(`start answered ${started.status}`);
  return { cookie, authorizationUrl };
}
