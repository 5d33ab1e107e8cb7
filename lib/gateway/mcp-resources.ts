import { gatewayPublicUrls } from './config-issuance.js';
import type { GatewayPolicy } from './policy.js';

/** A registered gateway as the resource check sees it: its redirect URIs name its public URLs. */
export interface GatewayRoutes {
  redirectUris: readonly string[];
  policy: GatewayPolicy | undefined;
}

const withoutTrailingSlash = (uri: string) => (uri.endsWith('/') ? uri.slice(0, -1) : uri);

/**
 * The resources (RFC 8707) of a gateway's MCP routes: `<public URL><route path>` for every route
 * marked `mcp: true` (CONTRACT "Access rules, MCP authorization"), once per public URL.
 */
export function mcpRouteResources(gateway: GatewayRoutes): string[] {
  const routes = (gateway.policy?.routes ?? []).filter((route) => route.mcp === true);
  if (routes.length === 0) return [];
  return gatewayPublicUrls(gateway.redirectUris).flatMap((base) => routes.map((route) => `${base}${route.path}`));
}

/**
 * Whether `resource` is the URL of a registered gateway's MCP route, which any client may ask a
 * token for (the consent page always names it). Exact, but for one trailing slash on either side,
 * as the gateway compares a route's resource.
 */
export function isMcpRouteResource(resource: string, gateways: readonly GatewayRoutes[]): boolean {
  const wanted = withoutTrailingSlash(resource);
  return gateways.some((gateway) => mcpRouteResources(gateway).some((uri) => withoutTrailingSlash(uri) === wanted));
}
