import t, { type Test } from 'tap';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt } from 'jose';
import { request } from 'undici';
import type { GatewayPolicy } from '#lib/gateway-protocol/policy.js';
import { findFreePort } from '#lib/runtime/listen.js';
import { chromiumSkip, launchChromium } from '../../helpers/browser.js';
import { makeTestCa, startHttpsServer } from '../../helpers/tls.js';
import { until } from '../../helpers/until.js';
import { startTestGateway } from '../../gateway/helpers.js';
import { ADMIN, startCp } from '../../gateway/real-world.js';

/**
 * The gateway as an MCP resource server, end to end (docs/mcp.md#protect-an-mcp-server-with-the-gateway):
 * an MCP server built with the official SDK sits behind a real gateway and control plane; the
 * SDK's client runs its own OAuth flow (discovery from the 401, Dynamic Client Registration,
 * PKCE, `resource`), the person signs up with a passkey in Chromium, and the tool sees who it is.
 */
const skip = chromiumSkip(t, 'the MCP client through the gateway in Chromium');

const POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [
    { path: '/mcp', mcp: true, min_assurance: 'passkey', tools: { delete_x: { min_assurance: 'sensitive' } } },
    { path: '/strong-mcp', mcp: true, min_assurance: 'sensitive' },
  ],
};

/** An MCP server (official SDK, stateless Streamable HTTP) with a reading tool and a destructive one. */
async function startMcpServer(t: Tap) {
  const calls: Array<{ tool: string; headers: IncomingMessage['headers'] }> = [];
  const server = createServer((req, res) => {
    const mcp = new McpServer({ name: 'notes-tools', version: '1.0.0' });
    const seen = (tool: string, headers: IncomingMessage['headers'] | undefined) => {
      calls.push({ tool, headers: headers ?? {} });
      return headers ?? {};
    };
    mcp.registerTool('whoami', { description: 'Who is calling (reads only)' }, (extra) => {
      const headers = seen('whoami', extra.requestInfo?.headers as IncomingMessage['headers']);
      const text = `${String(headers['x-auth-principal-type'])}:${String(headers['x-auth-subject'])}`;
      return { content: [{ type: 'text', text }] };
    });
    mcp.registerTool('delete_x', { description: 'Deletes x (destructive)' }, (extra) => {
      seen('delete_x', extra.requestInfo?.headers as IncomingMessage['headers']);
      return { content: [{ type: 'text', text: 'deleted' }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close());
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls };
}
type Tap = Parameters<typeof startCp>[0];

/** A control plane, the SDK-built MCP server, and a gateway registered for it with POLICY. */
async function startStack(t: Test, cpConfig: Record<string, unknown> = {}) {
  const cp = await startCp(t, cpConfig);
  const mcpServer = await startMcpServer(t);
  const port = await findFreePort();
  const gatewayUrl = `http://localhost:${port}`;
  const reg = await request(`${cp.url}/register`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Notes tools gateway',
      redirect_uris: [`${gatewayUrl}/_gate/callback`],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid email offline_access',
      token_endpoint_auth_method: 'client_secret_basic',
      gateway: POLICY,
    }),
  });
  const gatewayClient = (await reg.body.json()) as { client_id: string; client_secret: string };
  t.equal(reg.statusCode, 201, JSON.stringify(gatewayClient));
  const gw = await startTestGateway(t, {
    upstream: mcpServer.url,
    remoteKeys: true,
    overrides: {
      port,
      controlPlane: cp.url,
      clientId: gatewayClient.client_id,
      clientSecret: gatewayClient.client_secret,
    },
  });
  await until("the gateway's first signed config", async () => gw.running.gateway.configHolder.current ?? undefined);
  return { cp, mcpServer, gatewayUrl, gw, gatewayClientId: gatewayClient.client_id };
}

/**
 * The SDK client's first connection: refused for want of authorization, after which the client
 * has discovered the authorization server from the 401 and holds an authorization URL.
 */
async function firstConnectionNeedsAuthorization(t: Test, transport: StreamableHTTPClientTransport, seen: string[]) {
  await t.rejects(
    new Client({ name: 'notes-agent', version: '1.0.0' }).connect(transport),
    // Matched by message: the SDK's CJS and ESM builds each define their own UnauthorizedError.
    { message: new UnauthorizedError().message },
    'the first connection needs authorization',
  );
  t.ok(seen.includes('GET /.well-known/oauth-protected-resource/mcp'), 'discovered from the 401 (RFC 9728)');
}

/** The SDK's OAuthClientProvider as an MCP client implements it: everything kept in memory. */
class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  constructor(readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Notes MCP client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'openid',
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

t.test(
  "the SDK's MCP client signs a person in through Chromium and calls a tool behind the gateway",
  { skip, timeout: 180_000 },
  async (t) => {
    const { cp, mcpServer, gatewayUrl, gw, gatewayClientId } = await startStack(t);
    const mcpUrl = `${gatewayUrl}/mcp`;
    const refusalReceipts: Array<Record<string, unknown>> = [];
    cp.services.events.subscribe((_tx, event) => {
      if (event.type === 'gateway.refusals') refusalReceipts.push(event as unknown as Record<string, unknown>);
    });

    // Where the browser lands after approving: the MCP client's loopback redirect URI (RFC 8252).
    const callback = createServer((_req, res) => res.end('You can close this window.'));
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => callback.close(() => resolve())));
    const redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    const provider = new MemoryProvider(redirectUrl);
    const seen: string[] = [];
    // Keyplane's registration endpoint takes an initial access token (RFC 7591 §3): the client is
    // configured with one, and sends it only there.
    const clientFetch: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      seen.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      if (url.href === `${cp.url}/register`) {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${ADMIN}`);
        return fetch(input, { ...init, headers });
      }
      return fetch(input, init);
    };
    const transport = () =>
      new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: clientFetch });

    const first = transport();
    await firstConnectionNeedsAuthorization(t, first, seen);
    t.ok(seen.includes('POST /register'), 'registered by Dynamic Client Registration');
    const authorizationUrl = provider.authorizationUrl!;
    t.equal(authorizationUrl.origin, cp.url);
    t.equal(authorizationUrl.searchParams.get('resource'), mcpUrl, 'asks for the route as its resource (RFC 8707)');
    t.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');

    const { page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    const why = () => `at ${page.url()}; ${problems.join('; ')}`;
    const username = `mcp-${Date.now() % 100000}`;
    await page.goto(authorizationUrl.href);
    await page.fill('input[name="username"]', username);
    await page.click('button[data-action="signup"]');
    await page
      .waitForSelector('form[data-action="continue"] button[value="allow"]', { timeout: 30_000 })
      .catch((error) => {
        throw new Error(`no approval page ${why()}; ${error}`);
      });
    t.match(await page.textContent('body'), /Notes MCP client/, 'the approval page names the MCP client');
    await page.click('form[data-action="continue"] button[value="allow"]');
    await page
      .waitForURL((url) => url.href.startsWith(redirectUrl), { timeout: 30_000 })
      .catch((error) => {
        throw new Error(`not back at the MCP client ${why()}; ${error}`);
      });
    const code = new URL(page.url()).searchParams.get('code');
    t.ok(code, 'an authorization code at the loopback redirect URI');
    await first.finishAuth(code!);
    const access = provider.saved!.access_token;
    const claims = decodeJwt(access);
    t.equal(claims['aud'], mcpUrl, "the token's audience is the MCP route");

    const client = new Client({ name: 'notes-agent', version: '1.0.0' });
    await client.connect(transport());
    t.teardown(() => client.close());
    const tools = await client.listTools();
    t.same(tools.tools.map((tool) => tool.name).sort(), ['delete_x', 'whoami']);
    const who = await client.callTool({ name: 'whoami', arguments: {} });
    t.same(who.content, [{ type: 'text', text: `human:${claims['sub']}` }], 'the MCP server sees the person');
    const last = mcpServer.calls.at(-1)!;
    t.equal(last.headers['x-auth-assurance'], 'passkey');
    t.ok(last.headers['x-auth-assertion'], 'with the signed assertion');

    const raw = async (path: string, body: unknown, authorization?: string) => {
      const res = await request(`${gatewayUrl}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(authorization ? { authorization } : {}),
        },
        body: JSON.stringify(body),
      });
      return {
        status: res.statusCode,
        challenge: String(res.headers['www-authenticate']),
        body: (await res.body.json()) as Record<string, unknown>,
      };
    };
    const deleteCall = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'delete_x', arguments: {} } };
    const before = mcpServer.calls.length;

    const metadata = await request(`${gatewayUrl}/.well-known/oauth-protected-resource/mcp`);
    t.comment(`protected resource metadata: ${await metadata.body.text()}`);
    t.comment(`whoami: ${JSON.stringify(who.content)}`);
    const none = await raw('/mcp', deleteCall);
    t.comment(`no token: ${none.status} ${none.challenge} ${JSON.stringify(none.body)}`);
    t.equal(none.status, 401, 'no token');
    t.equal(none.challenge, `Bearer resource_metadata="${gatewayUrl}/.well-known/oauth-protected-resource/mcp"`);
    const other = await raw('/strong-mcp', deleteCall, `Bearer ${access}`);
    t.equal(other.status, 401, 'a token for another resource');
    t.match(other.body, { reason: 'invalid_token' });
    const sensitive = await raw('/mcp', deleteCall, `Bearer ${access}`);
    t.comment(`delete_x: ${sensitive.status} ${sensitive.challenge} ${JSON.stringify(sensitive.body)}`);
    t.equal(sensitive.status, 401, 'the destructive tool after a passkey-only sign-in');
    t.match(sensitive.body, { reason: 'insufficient_user_authentication', acr_values: 'sensitive' });
    t.match(sensitive.challenge, /error="insufficient_user_authentication", .*acr_values="sensitive"/);
    t.equal(mcpServer.calls.length, before, 'the MCP server saw none of the refused calls');
    const stillReads = await client.callTool({ name: 'whoami', arguments: {} });
    t.same(stillReads.content, who.content, 'while the reading tool passes');

    // The refusal is counted in the signed evidence; the control plane receipts it once per report.
    t.same(await gw.running.evidencePush!.pushOnce(), { outcome: 'accepted' });
    t.match(refusalReceipts.at(-1), {
      type: 'gateway.refusals',
      clientId: gatewayClientId,
      tools: ['delete_x insufficient_user_authentication 1'],
    });
    t.comment(`receipt: ${JSON.stringify(refusalReceipts.at(-1))}`);
  },
);

/** The same client, identified by a Client ID Metadata Document instead of registering. */
class DocumentProvider extends MemoryProvider {
  constructor(
    redirectUrl: string,
    readonly clientMetadataUrl: string,
  ) {
    super(redirectUrl);
  }
}

t.test(
  "the SDK's MCP client identified by a Client ID Metadata Document signs a person in and calls a tool",
  { skip, timeout: 180_000 },
  async (t) => {
    // The document is served over https by a certificate from a test CA the control plane's
    // fetcher trusts (`fetch.caFile`); 127.0.0.1 is reachable through `fetch.allowPrivateTargets`.
    const tls = makeTestCa(t);
    let documentBody = '';
    const documentHost = await startHttpsServer(t, tls, (req, res) => {
      if (req.url !== '/notes-mcp-client.json') {
        res.statusCode = 404;
        res.end();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.setHeader('cache-control', 'max-age=300');
      res.end(documentBody);
    });
    const clientId = `${documentHost.origin}/notes-mcp-client.json`;
    // A desktop MCP client listens on a loopback port it picks at each start: the document says
    // `application_type: "native"` and names the loopback redirect URI without a port (RFC 8252 §7.3).
    const document = {
      client_id: clientId,
      client_name: 'Notes MCP client (document)',
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
    documentBody = JSON.stringify(document);
    const { cp, mcpServer, gatewayUrl } = await startStack(t, {
      'fetch.caFile': tls.caFile,
      'fetch.allowPrivateTargets': true,
    });
    const mcpUrl = `${gatewayUrl}/mcp`;
    const callback = createServer((_req, res) => res.end('You can close this window.'));
    await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => callback.close(() => resolve())));
    const redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    const provider = new DocumentProvider(redirectUrl, clientId);
    const seen: string[] = [];
    // No initial access token: a document client never calls the registration endpoint.
    const clientFetch: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      seen.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      return fetch(input, init);
    };
    const transport = () =>
      new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: clientFetch });

    const first = transport();
    await firstConnectionNeedsAuthorization(t, first, seen);
    t.notOk(seen.includes('POST /register'), 'no Dynamic Client Registration');
    t.same(provider.client, { client_id: clientId, issuer: cp.url }, 'the client_id is the document URL');
    const authorizationUrl = provider.authorizationUrl!;
    t.comment(`authorization request: ${authorizationUrl.href}`);
    t.equal(authorizationUrl.origin, cp.url);
    t.equal(authorizationUrl.searchParams.get('client_id'), clientId);
    t.equal(authorizationUrl.searchParams.get('resource'), mcpUrl, 'asks for the route as its resource (RFC 8707)');
    t.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');

    const { page, problems, addAuthenticator } = await launchChromium(t);
    await addAuthenticator();
    const why = () => `at ${page.url()}; ${problems.join('; ')}`;
    const username = `mcpdoc-${Date.now() % 100000}`;
    await page.goto(authorizationUrl.href);
    await page.fill('input[name="username"]', username);
    await page.click('button[data-action="signup"]');
    await page
      .waitForSelector('form[data-action="continue"] button[value="allow"]', { timeout: 30_000 })
      .catch((error) => {
        throw new Error(`no approval page ${why()}; ${error}`);
      });
    const approval = (await page.textContent('body')) ?? '';
    t.match(approval, /Notes MCP client \(document\)/, "the approval page names the document's client");
    t.match(approval, new RegExp(`localhost:${documentHost.port}`), "and the document's host");
    t.ok(await page.$('[data-field="unverified"]'), 'as an unverified app');
    await page.click('form[data-action="continue"] button[value="allow"]');
    await page
      .waitForURL((url) => url.href.startsWith(redirectUrl), { timeout: 30_000 })
      .catch((error) => {
        throw new Error(`not back at the MCP client ${why()}; ${error}`);
      });
    const code = new URL(page.url()).searchParams.get('code');
    t.ok(code, 'an authorization code at the loopback redirect URI on the port the client chose');
    await first.finishAuth(code!);
    const access = provider.saved!.access_token;
    const claims = decodeJwt(access);
    t.equal(claims['aud'], mcpUrl, "the token's audience is the MCP route");
    t.equal(claims['client_id'] ?? claims['azp'], clientId, 'issued to the document client');
    t.ok(documentHost.requests.includes('GET /notes-mcp-client.json'), 'the control plane fetched the document');

    const client = new Client({ name: 'notes-agent', version: '1.0.0' });
    await client.connect(transport());
    t.teardown(() => client.close());
    const who = await client.callTool({ name: 'whoami', arguments: {} });
    t.comment(`whoami: ${JSON.stringify(who.content)}`);
    t.same(who.content, [{ type: 'text', text: `human:${claims['sub']}` }], 'the MCP server sees the person');
    const last = mcpServer.calls.at(-1)!;
    t.equal(last.headers['x-auth-assurance'], 'passkey');
    t.ok(last.headers['x-auth-assertion'], 'with the signed assertion');
  },
);
