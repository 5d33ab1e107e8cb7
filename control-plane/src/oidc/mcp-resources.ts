import { isMcpRouteResource } from '#lib/gateway-protocol/mcp.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

/**
 * The resources (RFC 8707) this client may ask a token for in this request: those it registered,
 * and the requested one too when it is a registered gateway's MCP route (any client may ask for
 * one, docs/mcp.md: the gateway that serves it decides who may call it). Only a single requested resource that the
 * client did not register is looked up, so an ordinary request reads nothing more.
 */
export async function requestableResources(
  services: Pick<ControlPlaneServices, 'storage'>,
  client: Pick<StoredClient, 'metadata'>,
  requested: unknown,
): Promise<readonly string[]> {
  const registered = client.metadata.resources;
  if (typeof requested !== 'string' || requested.length > 2000 || registered.includes(requested)) return registered;
  const gateways = (await services.storage.clients.listGateways()).map((gateway) => ({
    redirectUris: gateway.metadata.redirect_uris,
    policy: gateway.metadata.gateway,
  }));
  return isMcpRouteResource(requested, gateways) ? [...registered, requested] : registered;
}
