// An MCP server for behind the Keyplane gateway (docs/mcp.md#protect-an-mcp-server-with-the-gateway):
// the official SDK's McpServer on stateless Streamable HTTP, taking the caller only from the
// gateway's signed X-Auth-Assertion (docs/gateway.md#identity-to-the-upstream).
//
//   KEYPLANE_GATEWAY_URL=https://tools.example.com PORT=3000 node server.mjs
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const gatewayUrl = process.env.KEYPLANE_GATEWAY_URL;
const port = Number(process.env.PORT ?? 3000);
// The assertion's `aud` is the upstream origin the gateway sends the request to (its --upstream).
const ownOrigin = process.env.UPSTREAM_ORIGIN ?? `http://127.0.0.1:${port}`;
if (!gatewayUrl) throw new Error('set KEYPLANE_GATEWAY_URL to the gateway public URL');
const gatewayKeys = createRemoteJWKSet(new URL('/_gate/jwks', gatewayUrl));

/** The caller the gateway vouches for, or undefined when the header is missing or does not verify. */
async function verifiedCaller(request) {
  const assertion = request.headers['x-auth-assertion'];
  if (typeof assertion !== 'string') return undefined;
  try {
    const { payload } = await jwtVerify(assertion, gatewayKeys, {
      issuer: gatewayUrl,
      audience: ownOrigin,
      typ: 'kp-gate-assertion+jwt',
      algorithms: ['ES256'],
    });
    return payload;
  } catch {
    return undefined;
  }
}

/** One server per request (stateless), so the tools see exactly this request's caller. */
function notesTools(caller) {
  const server = new McpServer({ name: 'notes-tools', version: '1.0.0' });
  server.registerTool('whoami', { description: 'Who is calling (reads only)' }, () => ({
    content: [{ type: 'text', text: `${caller.principal_type}:${caller.sub}` }],
  }));
  server.registerTool('delete_x', { description: 'Deletes x (destructive)' }, () => {
    // The gateway's route already demands it; checked again so the tool stays safe if the route changes.
    if (caller.assurance !== 'sensitive') {
      return { isError: true, content: [{ type: 'text', text: 'delete_x needs a sensitive sign-in' }] };
    }
    return { content: [{ type: 'text', text: `deleted for ${caller.sub}` }] };
  });
  return server;
}

const httpServer = createServer(async (request, response) => {
  const caller = await verifiedCaller(request);
  if (!caller) {
    // Not through the gateway (or an expired assertion): nothing here is public.
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ ok: false, reason: 'unauthorized', message: 'no valid X-Auth-Assertion' }));
    return;
  }
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  response.on('close', () => void transport.close());
  await notesTools(caller).connect(transport);
  await transport.handleRequest(request, response);
});
httpServer.listen(port, '127.0.0.1', () => console.log(`listening ${ownOrigin}`));
