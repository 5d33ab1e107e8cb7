import t from 'tap';
import { isMcpRouteResource, mcpRouteResources } from '../../../lib/gateway/mcp.js';

const GATEWAY = {
  redirectUris: ['https://tools.example.com/_gate/callback'],
  policy: {
    mode: 'enforce' as const,
    routes: [{ path: '/mcp', mcp: true }, { path: '/admin' }],
  },
};

t.test("lists a gateway's MCP routes as resources at its public URL", async (t) => {
  t.same(mcpRouteResources([GATEWAY]), ['https://tools.example.com/mcp']);
  t.same(mcpRouteResources([{ ...GATEWAY, policy: undefined }]), []);
});

t.test('knows an MCP route resource, with or without a trailing slash, and nothing else', async (t) => {
  t.ok(isMcpRouteResource('https://tools.example.com/mcp', [GATEWAY]));
  t.ok(isMcpRouteResource('https://tools.example.com/mcp/', [GATEWAY]));
  t.notOk(isMcpRouteResource('https://tools.example.com/admin', [GATEWAY]), 'a route without mcp');
  t.notOk(isMcpRouteResource('https://tools.example.com/mcp/sub', [GATEWAY]));
  t.notOk(isMcpRouteResource('https://evil.example.com/mcp', [GATEWAY]));
  t.notOk(isMcpRouteResource('https://tools.example.com/mcp', []));
});
