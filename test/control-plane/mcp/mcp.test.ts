import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EmptyResultSchema, ErrorCode, LATEST_PROTOCOL_VERSION, McpError } from '@modelcontextprotocol/sdk/types.js';
import { jwtVerify, createLocalJWKSet } from 'jose';
import { MCP_TOOLS, classifyMethod } from '#lib/mcp/catalogue.js';
import { READ_ONLY_ERROR } from '../../../control-plane/src/mcp/server.js';
import { enrollAgent, recordEvents } from '../../helpers/agents.js';
import { buildSignedIn } from '../../helpers/signed-in.js';

// The areas this suite exercises (docs/platform.md#test-tiers): booting only these skips the rest.
const areas = ['mcp', 'agents', 'orgs', 'docs'] as const;
// One control plane listening on a real socket for the whole file; the SDK's own client talks to it.
const built = await buildSignedIn(t, { areas, config: { 'mcp.perIpPerMinute': 1000 } });
const { app, services } = built;
const events = recordEvents(services);
const { browser } = await built.signIn({ username: 'ada' });
const agent = await enrollAgent(app, browser, { visibility: 'public', name: 'Public bot' });
const hidden = await enrollAgent(app, browser, { visibility: 'private', name: 'Private bot' });
await browser.post('/auth/orgs/create', { name: 'Acme' });
const { siteId } = (await browser.post('/org/acme/websites/add', { url: 'https://www.acme.example/' })).json() as {
  siteId: string;
};
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

async function connect(tt: { teardown(fn: () => unknown): void }): Promise<Client> {
  const client = new Client({ name: 'keyplane-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
  await client.connect(transport);
  tt.teardown(() => client.close());
  return client;
}

function json(result: unknown): Record<string, any> {
  const r = result as { structuredContent: Record<string, any>; content: Array<{ type: string; text: string }> };
  return r.structuredContent;
}

async function refusal(promise: Promise<unknown>): Promise<McpError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof McpError) return error;
    throw error;
  }
  throw new Error('not refused');
}

t.test('the SDK client negotiates 2025-11-25 and lists the read-only catalogue', async (t) => {
  const client = await connect(t);
  t.equal(LATEST_PROTOCOL_VERSION, '2025-11-25');
  t.match(client.getServerVersion(), { name: 'keyplane' });
  t.ok(client.getServerCapabilities()?.tools, 'tools capability');
  const { tools } = await client.listTools();
  t.same(tools.map((tool) => tool.name).sort(), MCP_TOOLS.map((tool) => tool.name).sort());
  for (const tool of tools)
    t.match(tool.annotations, { readOnlyHint: true, destructiveHint: false }, `${tool.name} is read-only`);

  const raw = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  t.equal(raw.status, 200);
  t.equal(
    ((await raw.json()) as { result: { protocolVersion: string } }).result.protocolVersion,
    '2025-11-25',
    'the server answers with the version asked for',
  );
  t.equal(raw.headers.get('x-content-type-options'), 'nosniff');
  t.equal(raw.headers.get('cache-control'), 'no-store');
  t.match(raw.headers.get('content-security-policy'), /default-src 'none'/);
});

t.test('every tool answers through the SDK client', async (t) => {
  const client = await connect(t);

  const discovery = json(await client.callTool({ name: 'get_discovery', arguments: {} }));
  t.equal(discovery.metadata.issuer, services.config.issuer);
  t.equal(discovery.metadata.jwks_uri, `${services.config.issuer}/.well-known/jwks.json`);

  // A refusal leaves a receipt; it is what the receipt tools then look up and verify.
  const refused = await refusal(client.callTool({ name: 'delete_account', arguments: { id: 'usr_x' } }));
  const hash = (refused.data as { receipt: string }).receipt;
  t.match(hash, /^[0-9a-f]{64}$/);
  const pending = json(await client.callTool({ name: 'get_receipt', arguments: { hash } }));
  t.match(pending, { ok: true, receipt: { kind: 'mcp.attempt' } });
  await services.ledger.sealNow();
  const found = json(await client.callTool({ name: 'get_receipt', arguments: { hash } }));
  t.match(found, {
    ok: true,
    receipt: {
      kind: 'mcp.attempt',
      outcome: 'failure',
      tool: 'delete_account',
      method: 'tools/call',
      reason: 'mcp_read_only',
    },
    proof: { epoch: Number },
  });
  t.type(found.checkpoint, 'string');

  const verified = json(await client.callTool({ name: 'verify_receipt', arguments: { hash } }));
  t.match(verified, { ok: true, verified: true, epoch: found.proof.epoch, index: found.proof.index, kid: String });
  const copy = json(
    await client.callTool({
      name: 'verify_receipt',
      arguments: { hash, receipt: found.receipt, proof: found.proof, checkpoint: found.checkpoint },
    }),
  );
  t.equal(copy.verified, true, 'a kept copy verifies');
  const tampered = json(
    await client.callTool({
      name: 'verify_receipt',
      arguments: {
        hash,
        receipt: { ...found.receipt, tool: 'other' },
        proof: found.proof,
        checkpoint: found.checkpoint,
      },
    }),
  );
  t.match(tampered, { verified: false, failure: /canonical hash/ });
  const unknown = await client.callTool({ name: 'get_receipt', arguments: { hash: 'f'.repeat(64) } });
  t.equal(unknown.isError, true);
  t.match(json(unknown), { ok: false, reason: 'unknown_receipt' });

  const proof = json(await client.callTool({ name: 'get_agent_proof', arguments: { proof_id: agent.proofId } }));
  t.match(proof, { ok: true, proof: { proof_id: agent.proofId, name: 'Public bot', state: 'active', vc: String } });
  for (const proofId of [hidden.proofId, 'A'.repeat(22)]) {
    const missing = await client.callTool({ name: 'get_agent_proof', arguments: { proof_id: proofId } });
    t.equal(missing.isError, true);
    t.same(
      json(missing),
      { ok: false, reason: 'not_found', message: json(missing).message },
      'private and unknown proofs are the same not_found',
    );
  }

  const site = json(await client.callTool({ name: 'get_site_rating', arguments: { site_id: siteId } }));
  t.match(site, {
    ok: true,
    siteId,
    url: 'https://www.acme.example/',
    org: { slug: 'acme' },
    verified: false,
    status: 'unverified',
    rating: null,
  });
  t.match(json(await client.callTool({ name: 'get_site_rating', arguments: { site_id: 'site_nope' } })), {
    ok: false,
    reason: 'not_found',
  });

  const changelog = json(await client.callTool({ name: 'get_changelog', arguments: {} }));
  t.ok(changelog.versions.length >= 2);
  t.same(
    changelog.versions,
    (await app.inject({ method: 'GET', url: '/changelog?format=json' })).json().versions,
    'one source',
  );
  t.same(
    json(await client.callTool({ name: 'get_changelog', arguments: { version: '0.1.0' } })).versions.map(
      (v: { version: string }) => v.version,
    ),
    ['0.1.0'],
  );

  const bundle = json(await client.callTool({ name: 'get_agent_trust_bundle', arguments: {} }));
  const { payload, protectedHeader } = await jwtVerify(
    bundle.bundle,
    createLocalJWKSet(services.keys.jwks() as never),
    { issuer: services.config.issuer },
  );
  t.equal(protectedHeader.typ, 'agent-trust-bundle+jwt');
  t.ok(payload['claims']);

  const badArgs = await refusal(client.callTool({ name: 'get_receipt', arguments: { hash: 'nope' } }));
  t.equal(badArgs.code, ErrorCode.InvalidParams);
  t.match(badArgs.data, { reason: 'invalid_request' });
});

t.test('mutation attempts and unknown tools are refused and receipted; unknown methods are not found', async (t) => {
  const client = await connect(t);
  const before = events.length;

  const unknownTool = await refusal(client.callTool({ name: 'frobnicate', arguments: {} }));
  t.equal(unknownTool.code, ErrorCode.InvalidParams);
  t.match(unknownTool.data, { reason: 'mcp_unknown_tool', receipt: /^[0-9a-f]{64}$/ });

  const mutating = await refusal(client.callTool({ name: 'revoke_client', arguments: { client_id: 'x' } }));
  t.equal(mutating.code, READ_ONLY_ERROR);
  t.match(mutating.data, { reason: 'mcp_read_only', receipt: /^[0-9a-f]{64}$/ });

  const write = await refusal(
    client.request({ method: 'resources/write', params: { uri: 'x' } } as never, EmptyResultSchema),
  );
  t.equal(write.code, READ_ONLY_ERROR);
  t.match(write.data, { reason: 'mcp_read_only', receipt: /^[0-9a-f]{64}$/ });

  const unknownMethod = await refusal(
    client.request({ method: 'resources/frobnicate', params: {} } as never, EmptyResultSchema),
  );
  t.equal(unknownMethod.code, ErrorCode.MethodNotFound);

  const attempts = events.slice(before).filter((e) => e.type === 'mcp.attempt');
  t.match(attempts, [
    { type: 'mcp.attempt', outcome: 'failure', method: 'tools/call', tool: 'frobnicate', reason: 'mcp_unknown_tool' },
    { type: 'mcp.attempt', outcome: 'failure', method: 'tools/call', tool: 'revoke_client', reason: 'mcp_read_only' },
    { type: 'mcp.attempt', outcome: 'failure', method: 'resources/write', tool: null, reason: 'mcp_read_only' },
  ]);
  t.equal(attempts.length, 3, 'the unknown method left no receipt');

  // A name a caller made up is not written into the ledger verbatim when it is not plain.
  await refusal(client.callTool({ name: 'x'.repeat(100), arguments: {} }));
  t.match(events.at(-1), { type: 'mcp.attempt', tool: '(not a plain name)' });
  t.equal(classifyMethod('tools/list'), 'read');
  t.equal(classifyMethod('prompts/get'), 'unknown');
});

t.test('answers carry the request id as sent (value and type) and error messages without the SDK prefix', async (t) => {
  const rpc = async (message: Record<string, unknown>) => {
    const res = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', ...message }),
    });
    t.equal(res.status, 200);
    return (await res.json()) as { id: unknown; result?: unknown; error?: { code: number; message: string } };
  };
  t.strictSame((await rpc({ id: 7, method: 'ping' })).id, 7, 'a number stays a number');
  t.strictSame((await rpc({ id: '7', method: 'ping' })).id, '7', 'a string stays a string');
  t.strictSame((await rpc({ id: 'req-1', method: 'tools/list' })).id, 'req-1');

  const readOnly = await rpc({ id: 8, method: 'tools/call', params: { name: 'revoke_client', arguments: {} } });
  t.strictSame(readOnly.id, 8);
  t.match(readOnly.error, {
    code: READ_ONLY_ERROR,
    message: 'this MCP server is read-only: nothing can be changed through it',
  });
  const unknown = await rpc({ id: 10, method: 'resources/frobnicate', params: {} });
  t.equal(unknown.error?.message, 'Method not found: resources/frobnicate');

  const client = await connect(t);
  const refused = await refusal(client.callTool({ name: 'revoke_client', arguments: { client_id: 'x' } }));
  t.equal(
    refused.message,
    `MCP error ${READ_ONLY_ERROR}: this MCP server is read-only: nothing can be changed through it`,
    'the SDK client prefixes the message once',
  );
});

t.test('non-MCP failures keep the envelope; GET /mcp/tools is the plain catalogue', async (t) => {
  const tooBig = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      params: { pad: 'x'.repeat(services.config.http.bodyLimit) },
    }),
  });
  t.equal(tooBig.status, 413);
  t.match(await tooBig.json(), { ok: false, reason: 'payload_too_large' });
  const text = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
  t.equal(text.status, 415);
  t.match(await text.json(), { ok: false, reason: 'unsupported_media_type' });
  const notRpc = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"hello":1}',
  });
  t.equal(notRpc.status, 400);
  t.match(await notRpc.json(), { ok: false, reason: 'invalid_request' });
  const get = await fetch(`${base}/mcp`, { headers: { accept: 'text/event-stream' } });
  t.equal(get.status, 405);
  t.equal(get.headers.get('allow'), 'POST');
  t.match(await get.json(), { ok: false, reason: 'method_not_allowed' });

  const catalogue = (await (await fetch(`${base}/mcp/tools`)).json()) as { tools: Array<{ name: string }> };
  t.match(catalogue, {
    ok: true,
    endpoint: `${services.config.issuer}/mcp`,
    transport: 'streamable-http',
    protocolVersion: '2025-11-25',
  });
  t.same(
    catalogue.tools.map((tool: { name: string }) => tool.name),
    MCP_TOOLS.map((tool) => tool.name),
  );
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  for (const path of ['/mcp', '/mcp/tools']) t.ok(doc.paths[path], `${path} is in /openapi.json`);
});

t.test('MCP requests are throttled per address', async (t) => {
  const limited = await buildSignedIn(t, { areas, config: { 'mcp.perIpPerMinute': 2 } });
  const ping = () =>
    limited.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: { jsonrpc: '2.0', id: 1, method: 'ping' },
    });
  t.equal((await ping()).statusCode, 200);
  t.equal((await ping()).statusCode, 200);
  const third = await ping();
  t.equal(third.statusCode, 429);
  t.equal(third.json().reason, 'rate_limited');
  t.ok(third.headers['retry-after']);
});
