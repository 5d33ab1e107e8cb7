import type { RoutePolicy } from './policy.js';
import { gatewayPublicUrls } from './config-issuance.js';
import { findCaseVariantMember, findRepeatedMember } from './json-members.js';

/**
 * The gateway as an MCP resource server (docs/mcp.md#protect-an-mcp-server-with-the-gateway):
 * the resource an MCP route stands for, its protected resource metadata (RFC 9728) and the tool
 * calls a JSON-RPC request body makes. Pure: the caller reads the body and answers.
 */

/** RFC 9728 §3: the well-known prefix under which a resource's metadata is served (its path appended). */
export const PROTECTED_RESOURCE_PREFIX = '/.well-known/oauth-protected-resource';

/** The most of a request body the gateway reads to find the tools it calls (docs/gateway.md#mcp-routes). */
export const MCP_BODY_LIMIT = 1024 * 1024;

/** The resource (RFC 8707) of an MCP route: the control plane's registered one, else `<public URL><path>`. */
export function mcpResourceOf(route: Pick<RoutePolicy, 'path' | 'resource'>, publicUrl: string): string {
  return route.resource ?? `${publicUrl.replace(/\/$/, '')}${route.path}`;
}

/** Where a route's protected resource metadata lives (RFC 9728 §3.1: the resource's path after the prefix). */
export function protectedResourceMetadataUrl(route: Pick<RoutePolicy, 'path'>, publicUrl: string): string {
  return `${publicUrl.replace(/\/$/, '')}${PROTECTED_RESOURCE_PREFIX}${route.path === '/' ? '' : route.path}`;
}

/** The MCP route whose metadata `path` (under the well-known prefix) names, or null. */
export function findMetadataRoute<T extends Pick<RoutePolicy, 'path' | 'mcp'>>(
  routes: readonly T[],
  path: string,
): T | null {
  if (path !== PROTECTED_RESOURCE_PREFIX && !path.startsWith(`${PROTECTED_RESOURCE_PREFIX}/`)) return null;
  const rest = path.slice(PROTECTED_RESOURCE_PREFIX.length) || '/';
  const wanted = rest.replace(/\/$/, '') || '/';
  return routes.find((route) => route.mcp === true && (route.path.replace(/\/$/, '') || '/') === wanted) ?? null;
}

export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: ['header'];
  dpop_signing_alg_values_supported: string[];
}

/** The scopes a route declares: its own, then those its tool rules name (each once). */
export function routeScopes(route: Pick<RoutePolicy, 'scopes' | 'tools'>): string[] {
  const tools = Object.values(route.tools ?? {}).flatMap((rule) => rule.scopes ?? []);
  return [...new Set([...(route.scopes ?? []), ...tools])];
}

/** RFC 9728 §2: what a client needs to find the authorization server and ask it for a token for this route. */
export function buildProtectedResourceMetadata(
  route: Pick<RoutePolicy, 'path' | 'resource' | 'scopes' | 'tools'>,
  input: { publicUrl: string; issuer: string },
): ProtectedResourceMetadata {
  return {
    resource: mcpResourceOf(route, input.publicUrl),
    authorization_servers: [input.issuer],
    // The route's scopes and those its tools need (docs/apis.md#gateways-declare-their-scopes).
    scopes_supported: routeScopes(route),
    // RFC 6750 §2.1 only: a token in a query or form body would land in logs and upstream bodies.
    bearer_methods_supported: ['header'],
    dpop_signing_alg_values_supported: ['ES256', 'EdDSA'],
  };
}

/** JSON-RPC 2.0 §4 request members, and MCP's `tools/call` params (2025-11-25). */
const MESSAGE_MEMBERS = ['jsonrpc', 'method', 'params', 'id'] as const;
const TOOL_CALL_MEMBERS = ['name', 'arguments', '_meta'] as const;

/**
 * The tools a JSON-RPC message or batch calls (`tools/call`), or `malformed` when it is not
 * JSON-RPC or is ambiguous: a repeated member name anywhere, or `Method`, `Params`, `Name` (any
 * case variant of a member the rules read) where the app's parser might take it for the member
 * (docs/gateway.md#mcp-routes). The gateway refuses rather than guess what the app will read.
 */
export function readToolCalls(body: string): { tools: string[] } | { malformed: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { malformed: 'the body is not JSON' };
  }
  const repeated = findRepeatedMember(body);
  if (repeated !== null) return { malformed: `the member ${JSON.stringify(repeated)} is repeated` };
  // A batch is checked message by message: one refused tool refuses the whole request.
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  const tools: string[] = [];
  for (const message of messages) {
    if (!message || typeof message !== 'object' || Array.isArray(message))
      return { malformed: 'a JSON-RPC message must be an object' };
    const variant = findCaseVariantMember(message, MESSAGE_MEMBERS);
    if (variant !== null) return { malformed: `the member ${JSON.stringify(variant)} is not JSON-RPC's spelling` };
    const { method, params } = message as { method?: unknown; params?: unknown };
    if (params && typeof params === 'object' && !Array.isArray(params)) {
      const inParams = findCaseVariantMember(params, TOOL_CALL_MEMBERS);
      if (inParams !== null) return { malformed: `the member params.${inParams} is not MCP's spelling` };
    }
    if (method !== 'tools/call') continue;
    const name = (params as { name?: unknown } | null | undefined)?.name;
    if (typeof name !== 'string') return { malformed: 'tools/call needs params.name' };
    tools.push(name);
  }
  return { tools };
}

/**
 * The resources of every MCP route of the registered gateways: `<public URL><path>` for each
 * public URL a gateway has (its redirect URIs `<public URL>/_gate/callback`). Any client may ask
 * for one of them (RFC 8707): an MCP server is open to clients nobody registered in advance.
 */
export function mcpRouteResources(
  gateways: ReadonlyArray<{ redirectUris: readonly string[]; policy?: { routes: readonly RoutePolicy[] } | undefined }>,
): string[] {
  const out = new Set<string>();
  for (const gateway of gateways) {
    const routes = (gateway.policy?.routes ?? []).filter((route) => route.mcp === true);
    if (routes.length === 0) continue;
    for (const base of gatewayPublicUrls(gateway.redirectUris))
      for (const route of routes) out.add(mcpResourceOf(route, base));
  }
  return [...out];
}

const withoutTrailingSlash = (uri: string) => (uri.endsWith('/') ? uri.slice(0, -1) : uri);

/**
 * Whether `resource` is the URL of a registered gateway's MCP route, which any client may ask a
 * token for (the consent page always names it). Exact, but for one trailing slash on either side,
 * as the gateway compares a route's resource.
 */
export function isMcpRouteResource(resource: string, gateways: Parameters<typeof mcpRouteResources>[0]): boolean {
  const wanted = withoutTrailingSlash(resource);
  return mcpRouteResources(gateways).some((uri) => withoutTrailingSlash(uri) === wanted);
}
