import type { GatewayPolicy } from '../gateway-protocol/policy.js';
import { deriveIssuedPolicy, gatewayPublicUrls } from '../gateway-protocol/config-issuance.js';
import { mcpResourceOf, routeScopes } from '../gateway-protocol/mcp.js';

/**
 * The scopes a gateway's registration declares (docs/apis.md#gateways-declare-their-scopes): each
 * route's `scopes` (and its MCP tool rules' `scopes`) belong to the resource its tokens must name (the route's registered resource,
 * an MCP route's `<public URL><path>`, else the gateway's public URL). The registration is the one
 * record of them; they carry no description, so the consent page shows the names.
 */
export interface GatewayScopeDeclaration {
  resource: string;
  scopes: string[];
  /** An MCP route: any client may ask for its resource (docs/gateway.md#mcp-routes). */
  mcp: boolean;
}

export function gatewayScopeDeclarations(gateway: {
  redirectUris: readonly string[];
  resources: readonly string[];
  policy: GatewayPolicy;
}): GatewayScopeDeclaration[] {
  const issued = deriveIssuedPolicy(gateway.policy, gateway);
  const out: GatewayScopeDeclaration[] = [];
  for (const base of gatewayPublicUrls(gateway.redirectUris)) {
    for (const route of issued.routes) {
      const scopes = routeScopes(route);
      if (scopes.length === 0) continue;
      const mcp = route.mcp === true;
      const resource = mcp ? mcpResourceOf(route, base) : (route.resource ?? base);
      const existing = out.find((d) => d.resource === resource && d.mcp === mcp);
      if (existing) existing.scopes = [...new Set([...existing.scopes, ...scopes])];
      else out.push({ resource, scopes, mcp });
    }
  }
  return out;
}
