import type { AuthorizationClient } from '#lib/oauth/authorization-request.js';
import type { StoredClient } from '../storage/interface.js';
import type { ApiAccess } from '../apis/apis.js';

/**
 * What an authorization request is checked against: the client's own metadata, with `resources`
 * widened to what it may request (control-plane/src/oidc/mcp-resources.ts) when given, and to the
 * resource of an API that admits it, with that API's scopes (control-plane/src/apis/apis.ts).
 */
export function authorizationClientOf(
  client: StoredClient,
  resources?: readonly string[],
  api?: ApiAccess | null,
): AuthorizationClient {
  const requestable = resources ?? client.metadata.resources;
  return {
    ...(api
      ? {
          resources: requestable.includes(api.resource) ? requestable : [...requestable, api.resource],
          apiScopes: { resource: api.resource, names: api.scopes.map((scope) => scope.name) },
        }
      : { resources: requestable }),
    clientId: client.clientId,
    redirectUris: client.metadata.redirect_uris,
    // RFC 8252 §7.3: a native client's loopback redirect URI matches on any port.
    loopbackAnyPort: client.metadata.application_type === 'native',
    scope: client.metadata.scope,
    grantTypes: client.metadata.grant_types,
    allowsHumans: client.metadata.access.humans,
    ...(client.metadata.default_max_age !== undefined ? { defaultMaxAge: client.metadata.default_max_age } : {}),
    ...(client.metadata.default_acr_values ? { defaultAcrValues: client.metadata.default_acr_values } : {}),
  };
}
