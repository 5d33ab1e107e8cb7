import { fail } from '#lib/errors/keyplane-error.js';
import { errorTargetOf, type RawParams } from '#lib/oauth/authorization-request.js';
import type { StoredClient } from '../../storage/interface.js';
import { authorizationClientOf } from '../authorization-client.js';
import { resolveAuthorizationRequest } from '../resolve-authorization-request.js';
import { refuseToClient } from './refuse-to-client.js';
import type { AuthorizeServices, RefusalTarget } from './request.js';

/**
 * The request's parameters: as they came, or from a pushed request or a signed request object
 * (resolve-authorization-request.ts). A refusal goes to the redirect URI only when the plain
 * parameters name one the client registered (a popup's answer goes by query: no opener is known yet).
 */
export async function resolveRequest(
  services: AuthorizeServices,
  client: StoredClient,
  incoming: RawParams,
  refusal: RefusalTarget,
): Promise<RawParams> {
  const resolved = await resolveAuthorizationRequest(services, client, incoming);
  if (resolved.ok) return resolved.params;
  const target = errorTargetOf(incoming, authorizationClientOf(client));
  if (!target) throw fail('invalid_request', `The request object was refused: ${resolved.description}.`);
  refusal.target = target.responseMode === 'web_message' ? { ...target, responseMode: 'query' } : target;
  throw refuseToClient(resolved.error, resolved.description);
}
