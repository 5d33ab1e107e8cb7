import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import {
  createTokenClient,
  TokenEndpointError,
  type TokenClient,
  type TokenSet,
} from '../../gateway/src/token-client.js';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { parseCookieHeader, readSessionCookies } from '#lib/gateway-protocol/session-cookie.js';
import { NO_ROUTE_ADMITS, NOT_ADMITTED } from '#lib/access/evaluate-access.js';
import {
  CLIENT_ID,
  CONTROL_PLANE,
  signAccessToken,
  signIdToken,
  signInRedirect,
  startTestGateway,
  startUpstream,
} from './helpers.js';

/**
 * The callback and refresh refusals, with a stand-in token endpoint (a TokenClient stub) and ID
 * tokens forged with the stand-in control-plane key; the real control plane runs in
 * signin.test.ts.
 */
const POLICY: GatewayPolicy = { mode: 'enforce', routes: [] };
const HTML = { accept: 'text/html' };

function stub(
  exchange: (code: string) => Promise<TokenSet>,
  refresh: (token: string) => Promise<TokenSet> = () =>
    Promise.reject(new TokenEndpointError('refused', 'invalid_grant', 'no')),
): TokenClient & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    exchangeCode: ({ code }) => {
      calls.push(`code:${code}`);
      return exchange(code);
    },
    refresh: (token) => {
      calls.push(`refresh:${token}`);
      return refresh(token);
    },
  };
}

async function tokens(idClaims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<TokenSet> {
  return {
    accessToken: await signAccessToken({ audience: CLIENT_ID }),
    expiresIn: 600,
    scope: ['openid', 'email', 'offline_access'],
    refreshToken: 'rt-1',
    idToken: await signIdToken(idClaims, header),
  };
}

/** Starts a sign-in at the gateway; returns the login cookie and the state/nonce it sent to authorize. */
async function beginLogin(url: string, query = 'rd=/app'): Promise<{ cookie: string; state: string; nonce: string }> {
  const res = await request(`${url}/_gate/signin?${query}`);
  await res.body.dump();
  const location = new URL(String(res.headers['location']));
  const cookie = [res.headers['set-cookie']]
    .flat()
    .map((line) => String(line).split(';')[0] ?? '')
    .filter((pair) => pair.startsWith('kp_gate_login'))
    .join('; ');
  return { cookie, state: location.searchParams.get('state')!, nonce: location.searchParams.get('nonce')! };
}

async function callback(url: string, login: { cookie: string; state: string }, params: Record<string, string> = {}) {
  const res = await request(
    `${url}/_gate/callback?${new URLSearchParams({ code: 'c-1', state: login.state, iss: CONTROL_PLANE, ...params })}`,
    { headers: { cookie: login.cookie } },
  );
  const text = await res.body.text();
  return {
    status: res.statusCode,
    location: res.headers['location'],
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    setCookie: [res.headers['set-cookie'] ?? []].flat().map(String),
  };
}

t.test(
  "the ID token must carry this login's nonce, our client id, the control plane as issuer and ES256",
  async (t) => {
    let next: () => Promise<TokenSet> = () => Promise.reject(new Error('unset'));
    const client = stub(() => next());
    const gw = await startTestGateway(t, { policy: POLICY, deps: { tokenClient: client } });

    let login = await beginLogin(gw.url);
    next = () => tokens({ nonce: 'not-this-one' });
    let res = await callback(gw.url, login);
    t.equal(res.status, 401, 'a nonce from another login');
    t.match(res.body, { ok: false, reason: 'invalid_id_token' });
    t.notOk(
      res.setCookie.some((line) => line.startsWith('kp_gate_session=') && !/Max-Age=0/.test(line)),
      'no session',
    );
    t.ok(
      res.setCookie.some((line) => line.startsWith(`kp_gate_login.${login.state}=;`)),
      'the login is spent',
    );

    for (const [why, claims, header] of [
      ['another audience', { aud: 'someone-else' }, {}],
      ['another issuer', { iss: 'https://evil.example' }, {}],
      ['expired', { exp: Math.floor(Date.now() / 1000) - 5 }, {}],
      ['an access token', {}, { typ: 'at+jwt' }],
      ['no assurance', { acr: 'strong', svc: { principal: { type: 'human', id: 'user-1' } } }, {}],
    ] as const) {
      login = await beginLogin(gw.url);
      next = () => tokens({ nonce: login.nonce, ...claims }, header);
      res = await callback(gw.url, login);
      t.equal(res.status, 401, why);
      t.match(res.body, { reason: 'invalid_id_token' }, why);
    }

    login = await beginLogin(gw.url, `rd=${encodeURIComponent('/app?q=1')}`);
    next = () => tokens({ nonce: login.nonce, sub: 'user-7' });
    res = await callback(gw.url, login);
    t.equal(res.status, 302, JSON.stringify(res.body));
    t.equal(res.location, `${gw.url}/app?q=1`);
    t.same(client.calls.at(-1), 'code:c-1');
  },
);

t.test('a step-up that reached less than acr_values is refused with 403, not sent round again', async (t) => {
  let nonce = '';
  const gw = await startTestGateway(t, { policy: POLICY, deps: { tokenClient: stub(() => tokens({ nonce })) } });
  const login = await beginLogin(gw.url, 'rd=/admin&acr_values=sensitive');
  nonce = login.nonce;
  const res = await callback(gw.url, login);
  t.equal(res.status, 403);
  t.match(res.body, { reason: 'insufficient_assurance', acr_values: 'sensitive' });
  t.notOk(res.location);
});

t.test(
  'a control plane that does not answer the exchange is a 503 to retry; one without an id token is refused',
  async (t) => {
    let mode: 'down' | 'no-id' = 'down';
    const gw = await startTestGateway(t, {
      policy: POLICY,
      deps: {
        tokenClient: stub(async () => {
          if (mode === 'down') throw new TokenEndpointError('unavailable', undefined, 'down');
          return { accessToken: 'x', expiresIn: 60, scope: [] };
        }),
      },
    });
    let res = await callback(gw.url, await beginLogin(gw.url));
    t.equal(res.status, 503);
    t.match(res.body, { reason: 'unavailable' });
    mode = 'no-id';
    res = await callback(gw.url, await beginLogin(gw.url));
    t.equal(res.status, 401);
    t.match(res.body, { reason: 'invalid_id_token' });
    t.equal(
      (await callback(gw.url, { cookie: '', state: 'x' })).status,
      400,
      'a malformed state is just an unknown sign-in',
    );
  },
);

t.test('without client credentials the callback is not ready', async (t) => {
  const gw = await startTestGateway(t, { policy: POLICY });
  const res = await callback(gw.url, { cookie: '', state: 'A'.repeat(22) });
  t.equal(res.status, 503);
  t.match(res.body, { reason: 'not_ready' });
});

t.test(
  'refresh: a control plane that does not answer is a retryable 503, the next request refreshes; no refresh token signs out',
  async (t) => {
    const upstream = await startUpstream(t);
    let down = true;
    const client = stub(
      () => Promise.reject(new Error('unused')),
      async () => {
        if (down) throw new TokenEndpointError('unavailable', undefined, 'down');
        return { ...(await tokens({})), refreshToken: 'rt-2' };
      },
    );
    const gw = await startTestGateway(t, { upstream: upstream.url, policy: POLICY, deps: { tokenClient: client } });
    const expired = Math.floor(Date.now() / 1000) + 5;
    const cookie = await gw.sessionCookie({ accessToken: 'at', accessTokenExpiresAt: expired, refreshToken: 'rt-1' });
    let res = await request(`${gw.url}/app`, { headers: { ...HTML, cookie } });
    t.equal(res.statusCode, 503);
    t.match(await res.body.json(), { reason: 'unavailable' });
    t.equal(res.headers['retry-after'], '5');
    down = false;
    res = await request(`${gw.url}/app`, { headers: { ...HTML, cookie } });
    t.equal(res.statusCode, 200, 'the passing failure was not remembered');
    await res.body.dump();
    t.same(client.calls, ['refresh:rt-1', 'refresh:rt-1']);
    const renewed = await readSessionCookies(
      parseCookieHeader(
        [res.headers['set-cookie']]
          .flat()
          .map((line) => String(line).split(';')[0])
          .join('; '),
      ),
      { keys: gw.running.gateway.cookieKeys, now: Date.now(), secure: false },
    );
    t.equal(renewed?.refreshToken, 'rt-2');

    const noRefresh = await gw.sessionCookie({ accessToken: 'at', accessTokenExpiresAt: expired });
    const out = await request(`${gw.url}/app`, { headers: { ...HTML, cookie: noRefresh } });
    t.equal(out.statusCode, 302, 'an expired access token without a refresh token means signing in again');
    t.match(await signInRedirect(gw.running.gateway, out), { returnTo: '/app' });
    await out.body.dump();
    const fresh = await gw.sessionCookie({
      accessToken: 'at',
      accessTokenExpiresAt: Math.floor(Date.now() / 1000) + 300,
    });
    const ok = await request(`${gw.url}/app`, { headers: { ...HTML, cookie: fresh } });
    t.equal(ok.statusCode, 200, 'a fresh access token needs no refresh');
    t.notOk(ok.headers['set-cookie']);
    await ok.body.dump();
  },
);

/** `kind:error` of a token endpoint failure. */
async function outcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'ok';
  } catch (error) {
    const failure = error as TokenEndpointError;
    return `${failure.kind}:${failure.error ?? '-'}`;
  }
}

t.test('token client: OAuth errors are refusals; 5xx, garbage and silence are unavailability', async (t) => {
  let answer: { status: number; body: string } = { status: 400, body: '{"error":"invalid_grant"}' };
  const seen: Array<{ authorization?: string; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      seen.push({ ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}), body });
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = createTokenClient({ controlPlane: base, clientId: 'gw one', clientSecret: 's:e/cret' });
  t.equal(await outcome(client.refresh('rt')), 'refused:invalid_grant');
  t.equal(
    seen[0]!.authorization,
    `Basic ${Buffer.from('gw+one:s%3Ae%2Fcret').toString('base64')}`,
    'RFC 6749 §2.3.1 form-encoding',
  );
  t.same(Object.fromEntries(new URLSearchParams(seen[0]!.body)), { grant_type: 'refresh_token', refresh_token: 'rt' });
  answer = { status: 503, body: '{"ok":false}' };
  t.equal(
    await outcome(client.exchangeCode({ code: 'c', codeVerifier: 'v', redirectUri: 'http://gw/_gate/callback' })),
    'unavailable:-',
  );
  t.same(Object.fromEntries(new URLSearchParams(seen[1]!.body)), {
    grant_type: 'authorization_code',
    code: 'c',
    code_verifier: 'v',
    redirect_uri: 'http://gw/_gate/callback',
  });
  answer = { status: 200, body: '{"ok":true}' };
  t.equal(await outcome(client.refresh('rt')), 'unavailable:-', 'a 200 without a token');
  answer = {
    status: 200,
    body: '{"access_token":"a","expires_in":60,"scope":"openid email","refresh_token":"r2","id_token":"i"}',
  };
  t.same(await client.refresh('rt'), {
    accessToken: 'a',
    expiresIn: 60,
    scope: ['openid', 'email'],
    refreshToken: 'r2',
    idToken: 'i',
  });
  const closed = createTokenClient({ controlPlane: 'http://127.0.0.1:1', clientId: 'x', clientSecret: 'y' });
  t.equal(await outcome(closed.refresh('rt')), 'unavailable:-');
});

t.test(
  'access_denied for an account not admitted: back where it was, then the 403 page for a minute, until another sign-in; a declined consent is sign_in_refused',
  async (t) => {
    const client = stub(() => Promise.reject(new Error('no code is exchanged')));
    const policy: GatewayPolicy = { mode: 'enforce', routes: [{ path: '/', allow: { orgs: [{ slug: 'acme' }] } }] };
    const gw = await startTestGateway(t, { policy, deps: { tokenClient: client } });

    const declined = await callback(gw.url, await beginLogin(gw.url), {
      error: 'access_denied',
      error_description: 'the user declined',
    });
    t.equal(declined.status, 403);
    t.match(declined.body, { reason: 'sign_in_refused', error: 'access_denied' }, 'a person who declined');
    t.notOk(
      declined.setCookie.some((line) => line.startsWith('kp_gate_refused=1')),
      'is not marked refused',
    );

    for (const description of [NO_ROUTE_ADMITS, NOT_ADMITTED]) {
      const refused = await callback(gw.url, await beginLogin(gw.url, 'rd=/app/report'), {
        error: 'access_denied',
        error_description: description,
      });
      t.equal(refused.status, 302, description);
      t.equal(refused.location, `${gw.url}/app/report`, 'back where the browser was');
      const marker = refused.setCookie.find((line) => line.startsWith('kp_gate_refused=1'));
      t.match(marker, /Max-Age=60/, 'marked refused for a minute');
      t.match(marker, /HttpOnly/);
    }

    const page = await request(`${gw.url}/app/report`, { headers: { ...HTML, cookie: 'kp_gate_refused=1' } });
    const html = await page.body.text();
    t.equal(page.statusCode, 403, 'the next page is the 403 page, not a sign-in');
    t.match(html, /<h1>No access to 127\.0\.0\.1:\d+<\/h1>|<h1>No access to localhost:\d+<\/h1>/);
    t.notMatch(html, /data-field="account"/, 'naming no account: the gateway never learnt which');
    t.match(html, /href="\/_gate\/signin\?rd=%2Fapp%2Freport&amp;prompt=select_account"/, 'another account offered');

    const again = await request(`${gw.url}/_gate/signin?rd=/app/report&prompt=select_account`, {
      headers: { cookie: 'kp_gate_refused=1' },
    });
    await again.body.dump();
    t.equal(again.statusCode, 302, 'another sign-in starts');
    t.ok(
      [again.headers['set-cookie']]
        .flat()
        .map(String)
        .some((line) => /^kp_gate_refused=;.*Max-Age=0/.test(line)),
      'and ends the refusal',
    );
    const withoutMarker = await request(`${gw.url}/app/report`, { headers: HTML });
    await withoutMarker.body.dump();
    t.equal(withoutMarker.statusCode, 302, 'without the marker a page load is sent to sign in');
  },
);
