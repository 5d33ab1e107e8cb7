import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { MCP_TOOLS, classifyMethod, looksMutating } from '#lib/mcp/catalogue.js';
import { recordMcpAttempt, type RefusalReason } from './attempts.js';
import { callTool, isTool, type McpServices, type McpSources } from './tools.js';

/** JSON-RPC 2.0 §5.1 leaves -32000 to -32099 to the server: this one means "refused, read-only". */
export const READ_ONLY_ERROR = -32003;

/**
 * A JSON-RPC error as it goes on the wire. The SDK answers any thrown error with its `code`,
 * `message` and `data`; its own McpError writes "MCP error <code>: " into the message, which the
 * SDK's client then prefixes again, so ours carry the plain message (JSON-RPC 2.0 §5.1).
 */
export class JsonRpcError extends Error {
  override name = 'JsonRpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

// Compiled on the first tool call, not at import: about 0.05 s of CPU that every process that
// loaded the app paid (docs/platform.md#test-tiers).
let validators: Map<string, ValidateFunction> | undefined;
function validatorOf(name: string): ValidateFunction {
  if (!validators) {
    const ajv = new Ajv2020({ allErrors: false, strict: false });
    validators = new Map(MCP_TOOLS.map((tool) => [tool.name, ajv.compile(tool.inputSchema)]));
  }
  return validators.get(name)!;
}

async function refuse(
  services: McpServices,
  method: string,
  tool: string | null,
  reason: RefusalReason,
): Promise<never> {
  const receipt = await recordMcpAttempt(services, { method, tool, reason });
  const message =
    reason === 'mcp_read_only'
      ? 'this MCP server is read-only: nothing can be changed through it'
      : `no tool is named ${tool ?? ''}; tools/list names them`;
  throw new JsonRpcError(reason === 'mcp_read_only' ? READ_ONLY_ERROR : ErrorCode.InvalidParams, message, {
    reason,
    ...(receipt ? { receipt } : {}),
  });
}

/**
 * One MCP server per request (stateless Streamable HTTP): `tools/list` and `tools/call` of the
 * read-only catalogue. A call of a tool that is not in it, or a method that asks to change
 * something, is refused with a JSON-RPC error and receipted; any other unknown method is
 * JSON-RPC "Method not found" (-32601).
 */
export function createMcpServer(services: McpServices, sources: McpSources): Server {
  const server = new Server(
    { name: 'keyplane', title: 'Keyplane (read-only)', version: '0.1.0' },
    {
      capabilities: { tools: { listChanged: false } },
      instructions:
        "Read-only tools over Keyplane's public data: discovery, receipts and their proofs, public agent proofs, site Ratings, the changelog and the agent trust bundle. Nothing can be changed through this server.",
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: MCP_TOOLS.map((tool) => ({ ...tool })) }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name } = request.params;
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    if (!isTool(name))
      return refuse(services, 'tools/call', name, looksMutating(name) ? 'mcp_read_only' : 'mcp_unknown_tool');
    const validate = validatorOf(name);
    if (!validate(args)) {
      const first = validate.errors?.[0];
      throw new JsonRpcError(
        ErrorCode.InvalidParams,
        `arguments${first?.instancePath ?? ''} ${first?.message ?? 'are invalid'}`,
        { reason: 'invalid_request' },
      );
    }
    return callTool(services, sources, name, args);
  });
  server.fallbackRequestHandler = async (request) => {
    if (classifyMethod(request.method) === 'mutation') return refuse(services, request.method, null, 'mcp_read_only');
    throw new JsonRpcError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`);
  };
  return server;
}
