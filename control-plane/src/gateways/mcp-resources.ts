import { mcpRouteResources } from '../../../lib/gateway/mcp.js';
import type { ControlPlaneServices } from '../context.js';

/**
 * The MCP route resources of every registered gateway (docs/gateway.md#mcp-routes): resources
 * any client may request, besides its own registered ones, with the approval page always shown.
 */
export async function mcpResources(services: Pick<ControlPlaneServices, 'storage'>): Promise<string[]> {
  const gateways = await services.storage.clients.listGateways();
  return mcpRouteResources(
    gateways.map((client) => ({ redirectUris: client.metadata.redirect_uris, policy: client.metadata.gateway })),
  );
}
