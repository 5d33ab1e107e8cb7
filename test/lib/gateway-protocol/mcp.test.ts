import t from 'tap';
import {
  buildProtectedResourceMetadata,
  findMetadataRoute,
  isMcpRouteResource,
  mcpResourceOf,
  mcpRouteResources,
  protectedResourceMetadataUrl,
  readToolCalls,
} from '#lib/gateway-protocol/mcp.js';
import { checkToolCall, type Caller } from '#lib/gateway-protocol/policy.js';
import { parseGatewayPolicy } from '#lib/gateway-protocol/parse-policy.js';

const checkGatewayPolicy = (value: unknown) => parseGatewayPolicy(value, { at: 'enforcement' }).problems;
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';

const PUBLIC = 'https://tools.example.com';
const caller = (assurance: Caller['assurance'], subject = 'usr_a'): Caller => ({
  kind: 'bearer',
  subject,
  principalType: 'human',
  assurance,
  scopes: [],
  bucketId: subject,
});

t.test('the resource and metadata URL of an MCP route (RFC 9728 §3.1: the path after the prefix)', async (t) => {
  t.equal(mcpResourceOf({ path: '/mcp' }, `${PUBLIC}/`), `${PUBLIC}/mcp`);
  t.equal(mcpResourceOf({ path: '/mcp', resource: 'https://x.example/mcp' }, PUBLIC), 'https://x.example/mcp');
  t.equal(protectedResourceMetadataUrl({ path: '/mcp' }, PUBLIC), `${PUBLIC}/.well-known/oauth-protected-resource/mcp`);
  t.equal(protectedResourceMetadataUrl({ path: '/' }, PUBLIC), `${PUBLIC}/.well-known/oauth-protected-resource`);
  const routes = [{ path: '/mcp', mcp: true }, { path: '/app' }, { path: '/', mcp: true }];
  t.equal(findMetadataRoute(routes, '/.well-known/oauth-protected-resource/mcp'), routes[0]);
  t.equal(findMetadataRoute(routes, '/.well-known/oauth-protected-resource/app'), null, 'not an MCP route');
  t.equal(findMetadataRoute(routes, '/.well-known/oauth-protected-resource'), routes[2]);
  t.equal(findMetadataRoute(routes, '/.well-known/oauth-protected-resourcex/mcp'), null);
  t.same(
    buildProtectedResourceMetadata({ path: '/mcp', scopes: ['email'] }, { publicUrl: PUBLIC, issuer: 'https://id' }),
    {
      resource: `${PUBLIC}/mcp`,
      authorization_servers: ['https://id'],
      scopes_supported: ['email'],
      bearer_methods_supported: ['header'],
      dpop_signing_alg_values_supported: ['ES256', 'EdDSA'],
    },
  );
});

t.test('reads the tools a JSON-RPC message or batch calls; refuses what is not JSON-RPC', async (t) => {
  const call = (name: unknown) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });
  t.same(readToolCalls(JSON.stringify(call('a'))), { tools: ['a'] });
  t.same(readToolCalls(JSON.stringify([call('a'), { jsonrpc: '2.0', method: 'tools/list', id: 2 }, call('b')])), {
    tools: ['a', 'b'],
  });
  t.same(readToolCalls('{"jsonrpc":"2.0","method":"initialize","id":1}'), { tools: [] });
  t.match(readToolCalls('{"jsonrpc":'), { malformed: /not JSON/ });
  t.match(readToolCalls('[1]'), { malformed: /object/ });
  t.match(readToolCalls(JSON.stringify(call(7))), { malformed: /params.name/ });
});

t.test('refuses JSON-RPC bodies another parser could read as another call (issue #47 item 5)', async (t) => {
  const refused = [
    // JSON.parse keeps the last of equal names; many parsers keep the first.
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","name":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"},"params":{"name":"delete"}}',
    // Escapes decoded before names compare.
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","n\\u0061me":"delete"}}',
    // Go's encoding/json matches names ignoring case, Unicode folding included.
    '{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call","params":{"name":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","params":{"name":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{"name":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","param\u017f":{"name":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","NAME":"delete"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"a":1,"A":2}}}',
    '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"Method":"tools/call","params":{"name":"x"}}]',
  ];
  for (const body of refused) t.match(readToolCalls(body), { malformed: /repeated|spelling/ }, body);
  t.same(
    readToolCalls('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"Name":"a b"}}}'),
    { tools: ['read'] },
    "a tool's own arguments may use any names",
  );
  t.same(readToolCalls('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\"a\\":{"}}'), {
    tools: ['"a":{'],
  });
});

t.test('a tool demands its assurance first (RFC 9470 can fix it), then its allow rules', async (t) => {
  t.equal(checkToolCall({ min_assurance: 'sensitive' }, caller('sensitive')), null);
  t.match(checkToolCall({ min_assurance: 'sensitive' }, caller('passkey')), {
    reason: 'insufficient_user_authentication',
    requiredAssurance: 'sensitive',
  });
  t.match(checkToolCall({ allow: { users: ['usr_b'] } }, caller('passkey')), { reason: 'access_denied' });
  t.equal(checkToolCall({ allow: { users: ['usr_a'] } }, caller('passkey')), null);
  t.match(checkToolCall({ scopes: ['mail.send'], min_assurance: 'sensitive' }, caller('passkey')), {
    reason: 'insufficient_scope',
    missingScopes: ['mail.send'],
  });
  t.equal(checkToolCall({ scopes: ['mail.send'] }, { ...caller('passkey'), scopes: ['mail.send'] }), null);
});

t.test('the signed config and the registration check mcp and tools', async (t) => {
  const route = { path: '/mcp', mcp: true, tools: { delete_x: { min_assurance: 'sensitive' } } };
  t.same(checkGatewayPolicy({ mode: 'enforce', routes: [route] }), []);
  t.same(
    checkGatewayPolicy({
      mode: 'enforce',
      routes: [{ path: '/mcp', mcp: 'yes', tools: { x: { min_assurance: 'high', y: 1, scopes: ['a b'] } } }],
    }),
    [
      'gateway.routes[0].mcp must be a boolean',
      'gateway.routes[0].tools.x.y is not a known key',
      'gateway.routes[0].tools.x.scopes must be a list of scope names',
      'gateway.routes[0].tools.x.min_assurance must be one of: recovery, email, passkey, sensitive',
    ],
  );
  const base = { redirect_uris: ['https://tools.example.com/_gate/callback'] };
  const registered = validateClientMetadata({ ...base, gateway: { mode: 'enforce', routes: [route] } });
  t.same(registered.gateway?.routes, [route]);
  t.throws(
    () => validateClientMetadata({ ...base, gateway: { mode: 'enforce', routes: [{ path: '/x', tools: {} }] } }),
    /tools needs mcp: true/,
  );
  t.throws(
    () =>
      validateClientMetadata({
        ...base,
        gateway: { mode: 'enforce', routes: [{ path: '/x', mcp: true, public: true }] },
      }),
    /public/,
  );
  const forwarding = { path: '/mcp', mcp: true, forward_token: true };
  t.same(validateClientMetadata({ ...base, gateway: { mode: 'enforce', routes: [forwarding] } }).gateway?.routes, [
    forwarding,
  ]);
  t.same(checkGatewayPolicy({ mode: 'enforce', routes: [forwarding] }), []);
  t.throws(
    () =>
      validateClientMetadata({ ...base, gateway: { mode: 'enforce', routes: [{ path: '/x', forward_token: true }] } }),
    /forward_token needs mcp: true/,
  );
});

t.test('the MCP route resources of the registered gateways', async (t) => {
  t.same(
    mcpRouteResources([
      {
        redirectUris: ['https://tools.example.com/_gate/callback', 'https://tools.example.org/_gate/callback'],
        policy: { routes: [{ path: '/mcp', mcp: true }, { path: '/app' }] },
      },
      { redirectUris: ['https://other.example.com/_gate/callback'], policy: { routes: [{ path: '/' }] } },
      { redirectUris: ['https://none.example.com/_gate/callback'] },
    ]),
    ['https://tools.example.com/mcp', 'https://tools.example.org/mcp'],
  );
});

t.test('knows an MCP route resource, with or without a trailing slash, and nothing else', async (t) => {
  const gateway = {
    redirectUris: ['https://tools.example.com/_gate/callback'],
    policy: { routes: [{ path: '/mcp', mcp: true }, { path: '/admin' }] },
  };
  t.ok(isMcpRouteResource('https://tools.example.com/mcp', [gateway]));
  t.ok(isMcpRouteResource('https://tools.example.com/mcp/', [gateway]));
  t.notOk(isMcpRouteResource('https://tools.example.com/admin', [gateway]), 'a route without mcp');
  t.notOk(isMcpRouteResource('https://tools.example.com/mcp/sub', [gateway]));
  t.notOk(isMcpRouteResource('https://evil.example.com/mcp', [gateway]));
  t.notOk(isMcpRouteResource('https://tools.example.com/mcp', []));
});
