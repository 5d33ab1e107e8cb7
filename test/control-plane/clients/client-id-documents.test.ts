import t from 'tap';
import { decodeJwt } from 'jose';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { manualClock } from '../../helpers/build.js';
import { buildSignedIn, type Browser } from '../../helpers/signed-in.js';
import { ADMIN, authorizeUrl, decodeEntities, pkcePair, redirectParams, registerClient } from '../../helpers/oidc.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';

/**
 * Client ID Metadata Documents against a real https server whose certificate comes from a test
 * CA: the control plane trusts it through `fetch.caFile` (the fetcher's own configuration, no
 * process-wide NODE_EXTRA_CA_CERTS), and reaches 127.0.0.1 through `fetch.allowPrivateTargets`.
 */

const CALLBACK = 'https://mcp-client.example.com/callback';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

type Tap = Parameters<typeof makeTestCa>[0];

interface Served {
  status?: number;
  type?: string;
  headers?: Record<string, string>;
  body: string;
}

async function setup(t: Tap, options: { allowPrivate?: boolean } = {}) {
  const tls = makeTestCa(t);
  const documents = new Map<string, Served>();
  const host = await startHttpsServer(t, tls, (req: IncomingMessage, res: ServerResponse) => {
    const served = documents.get(req.url ?? '');
    if (!served) {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.statusCode = served.status ?? 200;
    res.setHeader('content-type', served.type ?? 'application/json');
    for (const [name, value] of Object.entries(served.headers ?? {})) res.setHeader(name, value);
    res.end(served.body);
  });
  const clock = manualClock(Date.now());
  const built = await buildSignedIn(t, {
    now: clock.now,
    config: {
      adminToken: ADMIN,
      'fetch.caFile': tls.caFile,
      ...(options.allowPrivate === false ? {} : { 'fetch.allowPrivateTargets': true }),
    },
  });
  const { browser } = await built.signIn({ username: 'ada' });
  /** Serves a document at `path` naming itself, with `extra` members and headers. */
  const serve = (path: string, extra: Record<string, unknown> = {}, served: Partial<Served> = {}) => {
    const clientId = `${host.origin}${path}`;
    documents.set(path, {
      body: JSON.stringify({
        client_id: clientId,
        client_name: 'Example MCP client',
        redirect_uris: [CALLBACK],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        ...extra,
      }),
      ...served,
    });
    return clientId;
  };
  return { ...built, browser, host, documents, serve, clock };
}

function request(clientId: string, challenge: string, extra: Record<string, string> = {}) {
  return {
    client_id: clientId,
    redirect_uri: CALLBACK,
    response_type: 'code',
    scope: 'openid profile',
    state: 'st-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...extra,
  };
}

/** The one-tap page's form, submitted as the browser would. */
async function approve(browser: Browser, page: string) {
  const form: Record<string, string> = {};
  for (const match of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    form[match[1]!] = decodeEntities(match[2]!);
  return browser.request(
    'POST',
    '/auth/authorize',
    new URLSearchParams({ ...form, decision: 'allow' }).toString(),
    FORM,
  );
}

async function authorizeJson(browser: Browser, params: Record<string, string>) {
  const res = await browser.get(authorizeUrl(params), { accept: 'application/json' });
  return { status: res.statusCode, body: res.json() as Record<string, unknown>, location: res.headers.location };
}

t.test('discovery says documents are supported, at both well-known paths', async (t) => {
  const { app } = await setup(t);
  const oidc = (await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json();
  const oauth = await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
  t.equal(oauth.statusCode, 200);
  t.same(oauth.json(), oidc, 'RFC 8414 metadata is the same document');
  t.equal(oidc.client_id_metadata_document_supported, true);
});

t.test('a document client signs a person in with PKCE, the consent page marking it unverified', async (t) => {
  const { app, browser, host, serve } = await setup(t);
  const clientId = serve('/clients/example.json', { logo_uri: 'https://mcp-client.example.com/logo.png' });
  const { verifier, challenge } = pkcePair();
  const page = await browser.get(authorizeUrl(request(clientId, challenge)));
  t.equal(page.statusCode, 200, page.body.slice(0, 300));
  t.match(page.body, /Continue to Example MCP client\?/);
  t.match(page.body, /data-field="unverified"/);
  t.match(page.body, new RegExp(`<strong>localhost:${host.port}</strong>`));
  t.match(page.body, /data-field="logo_uri"/);
  const approved = await approve(browser, page.body);
  t.equal(approved.statusCode, 303);
  const code = redirectParams(approved).get('code')!;
  t.ok(code);
  t.equal(redirectParams(approved).base, CALLBACK);

  const token = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: FORM,
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CALLBACK,
      code_verifier: verifier,
      client_id: clientId,
    }).toString(),
  });
  t.equal(token.statusCode, 200, token.body);
  t.equal(decodeJwt(token.json().access_token).client_id, clientId);
  t.equal(decodeJwt(token.json().id_token).aud, clientId);
  t.same(host.requests, ['GET /clients/example.json'], 'fetched once, then served from the cache');

  // The approval is remembered per client_id URL: the next sign-in goes straight through.
  const again = await browser.get(authorizeUrl(request(clientId, challenge)));
  t.equal(again.statusCode, 302);
  t.ok(redirectParams(again).get('code'));
});

t.test('a document client may ask for an MCP route resource; consent names it', async (t) => {
  const { app, browser, serve } = await setup(t);
  await registerClient(app, {
    client_name: 'Tools gateway',
    redirect_uris: ['https://tools.example.com/_gate/callback'],
    resources: [],
    gateway: { mode: 'enforce', routes: [{ path: '/mcp', mcp: true }, { path: '/admin' }] },
  });
  const clientId = serve('/clients/mcp.json');
  const { verifier, challenge } = pkcePair();
  const page = await browser.get(
    authorizeUrl(request(clientId, challenge, { resource: 'https://tools.example.com/mcp' })),
  );
  t.equal(page.statusCode, 200);
  t.match(page.body, /<code>https:\/\/tools.example.com\/mcp<\/code>/);
  const approved = await approve(browser, page.body);
  const code = redirectParams(approved).get('code')!;
  const token = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: FORM,
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: CALLBACK,
      code_verifier: verifier,
      client_id: clientId,
      resource: 'https://tools.example.com/mcp',
    }).toString(),
  });
  t.equal(token.statusCode, 200, token.body);
  t.equal(decodeJwt(token.json().access_token).aud, 'https://tools.example.com/mcp');

  const notMcp = await browser.get(
    authorizeUrl(request(clientId, challenge, { resource: 'https://tools.example.com/admin' })),
  );
  t.equal(redirectParams(notMcp).get('error'), 'invalid_target', 'a route without mcp is not requestable');
});

t.test('a document client can push its request (PAR) and authenticate as public at the token endpoint', async (t) => {
  const { app, browser, serve } = await setup(t);
  const clientId = serve('/clients/par.json');
  const { challenge } = pkcePair();
  const pushed = await app.inject({
    method: 'POST',
    url: '/auth/par',
    headers: FORM,
    payload: new URLSearchParams(request(clientId, challenge)).toString(),
  });
  t.equal(pushed.statusCode, 201, pushed.body);
  const page = await browser.get(authorizeUrl({ client_id: clientId, request_uri: pushed.json().request_uri }));
  t.equal(page.statusCode, 200);
  t.match(page.body, /data-field="unverified"/);
  const wrongMethod = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: { ...FORM, authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:x`).toString('base64')}` },
    payload: 'grant_type=authorization_code&code=x&redirect_uri=x&code_verifier=x',
  });
  t.equal(wrongMethod.statusCode, 401);
  t.equal(wrongMethod.json().error, 'invalid_client');
});

t.test('refuses each bad document with invalid_client naming the problem, never redirecting', async (t) => {
  const { browser, host, serve, documents } = await setup(t);
  const { challenge } = pkcePair();
  const big = serve('/clients/big.json', { padding: 'x'.repeat(6000) });
  documents.set('/clients/html.json', { type: 'text/html', body: '<html></html>' });
  documents.set('/clients/broken.json', { body: '{"client_id": ' });
  const cases: Record<string, [string, string]> = {
    'an http URL': [`http://localhost:${host.port}/clients/a.json`, 'not_https'],
    'a URL without a path': [host.origin, 'no_path'],
    'another client_id': [
      serve('/clients/other.json', { client_id: 'https://evil.example.com/c.json' }),
      'client_id_mismatch',
    ],
    'no redirect_uris': [serve('/clients/none.json', { redirect_uris: undefined }), 'no_redirect_uris'],
    oversized: [big, 'too_large'],
    'not JSON': [`${host.origin}/clients/html.json`, 'not_json'],
    malformed: [`${host.origin}/clients/broken.json`, 'not_json'],
    missing: [`${host.origin}/clients/missing.json`, 'fetch_failed'],
  };
  for (const [name, [clientId, problem]] of Object.entries(cases)) {
    const res = await authorizeJson(browser, request(clientId, challenge));
    t.equal(res.status, 400, name);
    t.equal(res.location, undefined, `${name}: not redirected`);
    t.equal(res.body.reason, 'invalid_client', name);
    t.match(res.body.message, new RegExp(`refused \\(${problem}\\)`), name);
  }
  const page = await browser.get(authorizeUrl(request(`http://localhost:${host.port}/c.json`, challenge)));
  t.match(page.body, /<code data-reason="invalid_client">/, 'people see the reason on the error page');
});

t.test('a redirect_uri the document does not list is the error page, never a redirect', async (t) => {
  const { browser, serve } = await setup(t);
  const clientId = serve('/clients/example.json');
  const { challenge } = pkcePair();
  const res = await authorizeJson(
    browser,
    request(clientId, challenge, { redirect_uri: 'https://evil.example.com/callback' }),
  );
  t.equal(res.location, undefined);
  t.equal(res.body.reason, 'unknown_client');
});

t.test('refuses a document on a private address unless fetch.allowPrivateTargets', async (t) => {
  const { browser, host, serve } = await setup(t, { allowPrivate: false });
  const clientId = serve('/clients/example.json');
  const { challenge } = pkcePair();
  const res = await authorizeJson(browser, request(clientId, challenge));
  t.equal(res.body.reason, 'invalid_client');
  t.match(res.body.message, /refused \(fetch_refused\)/);
  t.same(host.requests, [], 'nothing was sent to the internal address');
});

t.test('the token endpoint refuses a bad document as invalid_client', async (t) => {
  const { app, serve } = await setup(t);
  const clientId = serve('/clients/other.json', { client_id: 'https://evil.example.com/c.json' });
  const res = await app.inject({
    method: 'POST',
    url: '/auth/token',
    headers: FORM,
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: CALLBACK,
      code_verifier: 'x'.repeat(43),
      client_id: clientId,
    }).toString(),
  });
  t.equal(res.statusCode, 401);
  t.match(res.json(), { reason: 'invalid_client', error: 'invalid_client', error_description: /client_id_mismatch/ });
});

t.test('caches a document by its headers, fetches it again once expired, and never caches a refusal', async (t) => {
  const { browser, host, serve, clock } = await setup(t);
  const { challenge } = pkcePair();
  const path = '/clients/cached.json';
  const clientId = serve(path, {}, { headers: { 'cache-control': 'max-age=120' } });
  const fetches = () => host.requests.filter((line) => line === `GET ${path}`).length;
  t.equal((await browser.get(authorizeUrl(request(clientId, challenge)))).statusCode, 200);
  t.equal((await browser.get(authorizeUrl(request(clientId, challenge)))).statusCode, 200);
  t.equal(fetches(), 1, 'kept while fresh');
  clock.advance(121_000);
  serve(path, { client_name: 'Renamed client' }, { headers: { 'cache-control': 'max-age=120' } });
  const renamed = await browser.get(authorizeUrl(request(clientId, challenge)));
  t.equal(fetches(), 2, 'fetched again once expired');
  t.match(renamed.body, /Continue to Renamed client\?/);

  const badPath = '/clients/fixed-later.json';
  const badId = serve(badPath, { redirect_uris: undefined }, { headers: { 'cache-control': 'max-age=3600' } });
  t.equal((await authorizeJson(browser, request(badId, challenge))).body.reason, 'invalid_client');
  serve(badPath, {}, { headers: { 'cache-control': 'max-age=3600' } });
  const fixed = await browser.get(authorizeUrl(request(badId, challenge)));
  t.equal(fixed.statusCode, 200, 'the refusal was not kept');
  t.equal(host.requests.filter((line) => line === `GET ${badPath}`).length, 2);

  const storePath = '/clients/no-store.json';
  const storeId = serve(storePath, {}, { headers: { 'cache-control': 'no-store' } });
  await browser.get(authorizeUrl(request(storeId, challenge)));
  clock.advance(30_000);
  await browser.get(authorizeUrl(request(storeId, challenge)));
  t.equal(host.requests.filter((line) => line === `GET ${storePath}`).length, 1, 'no-store is kept the minimum');
  clock.advance(31_000);
  await browser.get(authorizeUrl(request(storeId, challenge)));
  t.equal(host.requests.filter((line) => line === `GET ${storePath}`).length, 2);
});

t.test('a native document client may come back on any loopback port', async (t) => {
  const { browser, serve } = await setup(t);
  const clientId = serve('/clients/native.json', {
    application_type: 'native',
    redirect_uris: ['http://127.0.0.1/callback'],
  });
  const { challenge } = pkcePair();
  const page = await browser.get(
    authorizeUrl(request(clientId, challenge, { redirect_uri: 'http://127.0.0.1:53117/callback' })),
  );
  t.equal(page.statusCode, 200);
  const approved = await approve(browser, page.body);
  t.equal(redirectParams(approved).base, 'http://127.0.0.1:53117/callback');
});
