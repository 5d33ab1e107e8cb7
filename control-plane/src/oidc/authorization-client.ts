import type { AuthorizationClient } from '../../../lib/oauth/authorization-request.js';
import type { StoredClient } from '../storage/types.js';

/**
 * What an authorization request is checked against: the registered client's own metadata, and
 * the resources of the gateways' MCP routes, which any client may request (docs/gateway.md#mcp-routes).
 */
export function authorizationClientOf(client: StoredClient, mcpResources: readonly string[] = []): AuthorizationClient {
  return {
    clientId: client.clientId,
    redirectUris: client.metadata.redirect_uris,
    scope: client.metadata.scope,
    grantTypes: client.metadata.grant_types,
    resources: [...client.metadata.resources, ...mcpResources],
    allowsHumans: client.metadata.access.humans,
    ...(client.metadata.default_max_age !== undefined ? { defaultMaxAge: client.metadata.default_max_age } : {}),
    ...(client.metadata.default_acr_values ? { defaultAcrValues: client.metadata.default_acr_values } : {}),
  };
}
