import type { AuthorizationClient } from '../../../lib/oauth/authorization-request.js';
import type { StoredClient } from '../storage/types.js';

/** What an authorization request is checked against: the registered client's own metadata. */
export function authorizationClientOf(client: StoredClient): AuthorizationClient {
  return {
    clientId: client.clientId,
    redirectUris: client.metadata.redirect_uris,
    scope: client.metadata.scope,
    grantTypes: client.metadata.grant_types,
    resources: client.metadata.resources,
    allowsHumans: client.metadata.access.humans,
    ...(client.metadata.default_max_age !== undefined ? { defaultMaxAge: client.metadata.default_max_age } : {}),
    ...(client.metadata.default_acr_values ? { defaultAcrValues: client.metadata.default_acr_values } : {}),
  };
}
