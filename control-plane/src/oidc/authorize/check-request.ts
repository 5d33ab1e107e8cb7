import { fail } from '#lib/errors/keyplane-error.js';
import { checkAuthorizationRequest, type RawParams } from '#lib/oauth/authorization-request.js';
import { apiAccessFor } from '../../apis/apis.js';
import { authorizationClientOf } from '../authorization-client.js';
import { requestableResources } from '../mcp-resources.js';
import { loadClient } from './load-client.js';
import { refuseToClient } from './refuse-to-client.js';
import { targetOf, type AuthorizeServices, type CheckedRequest, type RefusalTarget } from './request.js';

/**
 * Checks the request against its client's registration (RFC 6749 §4.1.1, OIDC Core §3.1.2.2). An
 * unregistered redirect URI is refused on a page; once the URI is verified, refusals go to it.
 */
export async function checkRequest(
  services: AuthorizeServices,
  params: RawParams,
  refusal: RefusalTarget,
): Promise<CheckedRequest> {
  const client = await loadClient(services, params);
  const resources = await requestableResources(services, client, params.resource);
  // An API that admits this client adds its resource and scopes (docs/apis.md).
  const api = await apiAccessFor(services, client, params.resource);
  const check = checkAuthorizationRequest(params, authorizationClientOf(client, resources, api));
  if (!check.ok) {
    if (check.target === null)
      throw fail('unknown_client', `The redirect address is not registered for this app. ${check.description}.`);
    refusal.target = check.target;
    throw refuseToClient(check.error, check.description);
  }
  const authz = check.request;
  refusal.target = targetOf(authz);
  // The popup is in-place sign-in: only for a client that turned it on (docs/in-place.md).
  if (authz.responseMode === 'web_message' && client.metadata.in_place !== true) {
    refusal.target = { ...refusal.target, responseMode: 'query' };
    throw refuseToClient(
      'invalid_request',
      'response_mode=web_message needs in-place sign-in turned on (client metadata in_place: true)',
    );
  }
  // docs/gateway.md#mcp-routes: an MCP route's resource goes to any client, so the person
  // always sees who asks for it (no remembered approval, no first-party skip).
  const requested = authz.resource;
  const mcpResource =
    requested !== undefined && !client.metadata.resources.includes(requested) && resources.includes(requested);
  return { client, authz, target: refusal.target, mcpResource };
}
