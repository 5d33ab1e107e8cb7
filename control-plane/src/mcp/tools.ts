import { createLocalJWKSet, type JSONWebKeySet } from 'jose';
import type { ChangelogVersion } from '#lib/changelog/keep-a-changelog.js';
import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { decodeCheckpoint } from '#lib/ledger/checkpoint.js';
import { verifyReceiptProof, type InclusionProof } from '#lib/ledger/verify-receipt.js';
import { MCP_TOOLS } from '#lib/mcp/catalogue.js';
import { proofVector, visibleAgent } from '../agents/proof.js';
import { signTrustBundle } from '../agents/trust-bundle.js';
import type { ControlPlaneServices } from '../context.js';
import { lookUpReceipt } from '../ledger/proofs.js';
import { siteVerification } from '../scan/seal.js';

export type McpServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'keys' | 'now' | 'events' | 'state' | 'secrets'
>;

export interface McpSources {
  /** The OpenID Provider metadata as `/.well-known/openid-configuration` serves it. */
  discovery(): Record<string, unknown>;
  changelog(): ChangelogVersion[];
}

/** A tool's answer: `structuredContent` is the JSON object, and the text block carries the same JSON. */
export interface ToolAnswer {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent: Record<string, unknown>;
  isError?: boolean;
}

function answer(body: Record<string, unknown>, isError = false): ToolAnswer {
  return {
    content: [{ type: 'text', text: JSON.stringify(body) }],
    structuredContent: body,
    ...(isError ? { isError: true } : {}),
  };
}

type Args = Record<string, unknown>;
type Tool = (services: McpServices, sources: McpSources, args: Args) => Promise<Record<string, unknown>>;

async function verifyReceipt(services: McpServices, args: Args): Promise<Record<string, unknown>> {
  const hash = String(args['hash']);
  let input: { receipt: unknown; proof: InclusionProof; checkpoint: string };
  if (args['proof'] !== undefined || args['checkpoint'] !== undefined || args['receipt'] !== undefined) {
    if (args['proof'] === undefined || typeof args['checkpoint'] !== 'string' || args['receipt'] === undefined) {
      throw fail('invalid_request', 'give receipt, proof and checkpoint together, or only hash');
    }
    input = { receipt: args['receipt'], proof: args['proof'] as InclusionProof, checkpoint: args['checkpoint'] };
  } else {
    const found = await lookUpReceipt(services, hash);
    if ('pending' in found)
      return {
        ok: true,
        hash,
        verified: false,
        pending: true,
        failure: "the receipt's epoch is not sealed yet; ask again in a few seconds",
      };
    input = found;
  }
  const keys = createLocalJWKSet(services.keys.jwks() as unknown as JSONWebKeySet);
  const verdict = await verifyReceiptProof({ hash, ...input }, keys);
  if (!verdict.ok) return { ok: true, hash, verified: false, failure: verdict.failure };
  const { epoch, size, root, at } = verdict.checkpoint;
  return {
    ok: true,
    hash,
    verified: true,
    epoch,
    index: input.proof.index,
    size,
    root,
    at,
    kid: decodeCheckpoint(input.checkpoint).kid,
  };
}

const TOOLS: Record<string, Tool> = {
  get_discovery: async (_services, sources) => ({ ok: true, metadata: sources.discovery() }),
  get_receipt: async (services, _sources, args) => ({
    ok: true,
    ...(await lookUpReceipt(services, String(args['hash']))),
  }),
  verify_receipt: async (services, _sources, args) => verifyReceipt(services, args),
  get_agent_proof: async (services, _sources, args) => {
    const agent = await visibleAgent(services, String(args['proof_id']));
    return { ok: true, proof: await proofVector(services, agent) };
  },
  get_site_rating: async (services, _sources, args) => {
    const found = await siteVerification(services, String(args['site_id']));
    if (!found) throw fail('not_found', 'no such site');
    return { ok: true, ...found.view, verify_url: `${services.config.issuer}/verify/${found.view.siteId}` };
  },
  get_changelog: async (_services, sources, args) => {
    const versions = sources.changelog();
    if (args['version'] === undefined) return { ok: true, versions };
    const picked = versions.filter((v) => v.version === args['version']);
    if (picked.length === 0) throw fail('not_found', `no version ${String(args['version'])} in the changelog`);
    return { ok: true, versions: picked };
  },
  get_agent_trust_bundle: async (services) => ({
    ok: true,
    bundle: await signTrustBundle(services),
    jwks_uri: `${services.config.issuer}/.well-known/jwks.json`,
  }),
};

export function isTool(name: string): boolean {
  return Object.hasOwn(TOOLS, name) && MCP_TOOLS.some((t) => t.name === name);
}

/**
 * Runs a catalogue tool. A refusal the tool itself reaches (an unknown receipt, a private proof
 * id, a bad argument) is a tool result with `isError` and the usual envelope as its content, as
 * MCP 2025-11-25 "Error Handling" asks for tool execution errors; anything else propagates.
 */
export async function callTool(
  services: McpServices,
  sources: McpSources,
  name: string,
  args: Args,
): Promise<ToolAnswer> {
  const tool = TOOLS[name];
  if (!tool || !isTool(name)) throw new Error(`${name} is not a tool`);
  try {
    return answer(await tool(services, sources, args));
  } catch (error) {
    if (isKeyplaneError(error)) return answer(error.toEnvelope(), true);
    throw error;
  }
}
