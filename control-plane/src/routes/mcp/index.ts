import type { FastifyInstance } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { sendRawFailure } from '../../plugins/errors.js';
import { enforceLimit } from '#lib/errors/rate-limited.js';
import { MCP_TOOLS } from '#lib/mcp/catalogue.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import { loadChangelog } from '../../changelog/changelog.js';
import { createMcpServer } from '../../mcp/server.js';
import { rawDataHeaders } from '../../plugins/security-headers.js';
import { discoveryDocument, type Collected } from '../discovery/metadata.js';
import { errorResponses, okObject } from '../../http/schemas.js';

const jsonRpcMessage = {
  type: 'object',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { const: '2.0' },
    // No `type` here: fastify coerces types, and a string-or-integer schema turned `7` into `"7"`.
    // The SDK checks the id, and JSON-RPC 2.0 §5 wants it back with the same value and type.
    id: { description: 'A string or an integer, answered as sent' },
    method: { type: 'string', maxLength: 200 },
    params: { type: 'object' },
  },
} as const;

const toolSchema = {
  type: 'object',
  required: ['name', 'title', 'description', 'inputSchema', 'annotations'],
  properties: {
    name: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    inputSchema: { type: 'object', additionalProperties: true },
    annotations: { type: 'object', additionalProperties: true },
  },
} as const;

/**
 * The read-only MCP tool server (docs/mcp.md): Streamable HTTP in stateless mode, one SDK
 * server and transport per POST, answers as JSON. Fastify parses the body first, so the body
 * limit, the content-type rule and the error envelope hold for anything that is not a JSON-RPC
 * exchange; the JSON-RPC exchange itself is the SDK's.
 */
export default async function mcpRoutes(app: FastifyInstance, options: { collected: Collected }): Promise<void> {
  const services = app.kp;
  const https = services.config.issuer.startsWith('https://');
  const sources = {
    discovery: () => discoveryDocument(services.config.issuer, options.collected),
    changelog: () => loadChangelog(),
  };
  const limiter = new RateLimiter(services.state);

  app.post(
    '/mcp',
    {
      schema: {
        tags: ['mcp'],
        summary: `MCP tool server (Streamable HTTP, JSON-RPC 2.0, protocol ${LATEST_PROTOCOL_VERSION}), read-only; send Accept: application/json, text/event-stream`,
        description:
          'Methods: initialize, ping, tools/list, tools/call. A call of an unknown tool (-32602, reason mcp_unknown_tool) or anything that would change state (-32003, reason mcp_read_only) is refused and leaves an mcp.attempt receipt whose hash is in error.data.receipt; other unknown methods are -32601.',
        body: { anyOf: [jsonRpcMessage, { type: 'array', minItems: 1, maxItems: 20, items: jsonRpcMessage }] },
        response: {
          200: { description: 'A JSON-RPC response', type: 'object', additionalProperties: true },
          202: { description: 'Accepted (notifications only)', type: 'null' },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const decision = await limiter.hit('mcp', request.ip, {
        max: services.config.mcp.perIpPerMinute,
        windowMs: 60_000,
      });
      enforceLimit(decision, 'too many MCP requests from this address');
      const server = createMcpServer(services, sources);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      reply.hijack();
      const raw = reply.raw;
      for (const [name, value] of Object.entries({ ...rawDataHeaders(https), 'x-request-id': request.id }))
        raw.setHeader(name, value);
      raw.on('close', () => {
        void transport.close().catch(() => undefined);
        void server.close().catch(() => undefined);
      });
      try {
        await transport.handleRequest(request.raw, raw, request.body);
      } catch (error) {
        // The reply was handed to the transport, so fastify's error handler cannot answer it.
        request.log.error({ err: error }, 'MCP request failed');
        sendRawFailure(raw, error);
      }
    },
  );

  const notAllowed = async () => {
    throw fail('method_not_allowed', 'this MCP server is stateless: POST JSON-RPC messages to /mcp', {
      headers: { allow: 'POST' },
    });
  };
  app.get(
    '/mcp',
    {
      schema: {
        tags: ['mcp'],
        summary: 'No server-initiated stream: the server is stateless, so GET answers 405 (MCP Streamable HTTP §2.2.3)',
        response: errorResponses,
      },
    },
    notAllowed,
  );
  app.delete(
    '/mcp',
    {
      schema: {
        tags: ['mcp'],
        summary: 'No session to end: the server is stateless, so DELETE answers 405',
        response: errorResponses,
      },
    },
    notAllowed,
  );

  app.get(
    '/mcp/tools',
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['mcp'],
        summary: 'The MCP tool catalogue as plain JSON: every tool with its input schema; all are read-only',
        response: {
          200: okObject(
            {
              endpoint: { type: 'string' },
              transport: { const: 'streamable-http' },
              protocolVersion: { type: 'string' },
              supportedProtocolVersions: { type: 'array', items: { type: 'string' } },
              tools: { type: 'array', items: toolSchema },
            },
            ['endpoint', 'protocolVersion', 'tools'],
          ),
          ...errorResponses,
        },
      },
    },
    async () => ({
      ok: true,
      endpoint: `${services.config.issuer}/mcp`,
      transport: 'streamable-http',
      protocolVersion: LATEST_PROTOCOL_VERSION,
      supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
      tools: MCP_TOOLS,
    }),
  );
}
