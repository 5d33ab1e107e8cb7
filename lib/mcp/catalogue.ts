/**
 * The read-only MCP tool catalogue and the rule that tells reads from attempted changes.
 * Pure: the control plane implements the tools (control-plane/src/mcp/tools.ts).
 */

export interface ToolDescriptor {
  name: string;
  title: string;
  description: string;
  /** JSON Schema (2020-12) of `arguments`. */
  inputSchema: {
    type: 'object';
    properties: Record<string, unknown>;
    required?: string[];
    additionalProperties: false;
  };
  /** MCP tool annotations (2025-11-25 "Tool"): every tool here only reads. */
  annotations: { readOnlyHint: true; destructiveHint: false; idempotentHint: true; openWorldHint: false };
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;
const hex64 = {
  type: 'string',
  pattern: '^[0-9a-f]{64}$',
  description: "Lower-case hex SHA-256 of the receipt's RFC 8785 canonical JSON",
} as const;

export const MCP_TOOLS: readonly ToolDescriptor[] = [
  {
    name: 'get_discovery',
    title: 'OpenID Connect discovery',
    description: 'The OpenID Provider metadata (OIDC Discovery 1.0): issuer, endpoints, JWKS URI and capabilities.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: READ_ONLY,
  },
  {
    name: 'get_receipt',
    title: 'Receipt by hash',
    description:
      'A ledger receipt by its hash, with its RFC 9162 inclusion proof and signed checkpoint, or pending until sealed. Receipts are found by hash only.',
    inputSchema: { type: 'object', properties: { hash: hex64 }, required: ['hash'], additionalProperties: false },
    annotations: READ_ONLY,
  },
  {
    name: 'verify_receipt',
    title: 'Verify a receipt',
    description:
      "Checks a receipt's canonical hash, its audit path and the checkpoint signature against this server's JWKS. Give only `hash` to verify what the ledger holds, or also `receipt`, `proof` and `checkpoint` to verify a copy you kept.",
    inputSchema: {
      type: 'object',
      properties: {
        hash: hex64,
        receipt: { type: 'object', description: 'The receipt as you hold it' },
        proof: {
          type: 'object',
          required: ['epoch', 'index', 'size', 'path'],
          additionalProperties: false,
          properties: {
            epoch: { type: 'integer', minimum: 1 },
            index: { type: 'integer', minimum: 0 },
            size: { type: 'integer', minimum: 1 },
            path: { type: 'array', maxItems: 64, items: { type: 'string', pattern: '^[0-9a-f]{64}$' } },
          },
        },
        checkpoint: { type: 'string', maxLength: 4096, description: 'The checkpoint (compact JWS) the proof leads to' },
      },
      required: ['hash'],
      additionalProperties: false,
    },
    annotations: READ_ONLY,
  },
  {
    name: 'get_agent_proof',
    title: 'Public agent proof',
    description:
      'The public proof vector of an agent by its proof_id (claims, evidence, a W3C verifiable credential and the A2A projection). Private and unknown ids answer alike: not found.',
    inputSchema: {
      type: 'object',
      properties: { proof_id: { type: 'string', minLength: 1, maxLength: 100 } },
      required: ['proof_id'],
      additionalProperties: false,
    },
    annotations: READ_ONLY,
  },
  {
    name: 'get_site_rating',
    title: "A site's public Rating",
    description:
      "What a site's verification page shows: its org, URL, whether domain control is proved, its status and the signed posture Rating.",
    inputSchema: {
      type: 'object',
      properties: { site_id: { type: 'string', minLength: 1, maxLength: 100 } },
      required: ['site_id'],
      additionalProperties: false,
    },
    annotations: READ_ONLY,
  },
  {
    name: 'get_changelog',
    title: 'Changelog',
    description: 'The release history, newest first, as versions with their dates and changes; `version` picks one.',
    inputSchema: {
      type: 'object',
      properties: { version: { type: 'string', minLength: 1, maxLength: 40 } },
      additionalProperties: false,
    },
    annotations: READ_ONLY,
  },
  {
    name: 'get_agent_trust_bundle',
    title: 'Agent trust bundle',
    description:
      'The claim registry as a signed trust bundle (compact JWS, typ agent-trust-bundle+jwt, ES256) for federation peers.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: READ_ONLY,
  },
];

/** Methods this server answers (MCP 2025-11-25 base protocol and the tools capability). */
export const MCP_READ_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping', 'tools/list', 'tools/call']);

// A method whose last segment is one of these verbs asks to change something (resources/write, tools/create, …).
const MUTATING =
  /^(write|create|update|delete|remove|set|put|patch|post|insert|add|upsert|rotate|revoke|disable|enable|register|unregister|grant|approve|reset|modify|edit|rename|move|upload|import|execute|run|send|publish|cancel|subscribe|unsubscribe)(?:[_A-Z-].*)?$/i;

export type MethodClass = 'read' | 'mutation' | 'unknown';

/** Whether a JSON-RPC method is one this server answers, an attempt to change something, or simply unknown. */
export function classifyMethod(method: string): MethodClass {
  if (MCP_READ_METHODS.has(method) || method.startsWith('notifications/')) return 'read';
  const last = method.split('/').pop() ?? '';
  return MUTATING.test(last) ? 'mutation' : 'unknown';
}

/** Whether a tool name that is not in the catalogue reads like a request to change something. */
export function looksMutating(tool: string): boolean {
  return tool.split(/[_./-]/).some((word) => MUTATING.test(word));
}

const PLAIN = /^[A-Za-z0-9_./-]{1,64}$/;

/** What a receipt may say about a name a caller sent: the name itself when short and plain, else a marker. */
export function receiptSafeName(name: unknown): string {
  return typeof name === 'string' && PLAIN.test(name) ? name : '(not a plain name)';
}
