import { verifyIdTokenHint } from '../tokens.js';
import { refuseToClient } from './refuse-to-client.js';
import type { AuthorizeServices, CheckedRequest } from './request.js';

/**
 * OIDC Core §3.1.2.1: `id_token_hint` must be an ID token this server issued to this client (an
 * expired one still names the account). Returns the account it names, or undefined without a hint.
 */
export async function checkIdTokenHint(
  services: AuthorizeServices,
  { client, authz }: CheckedRequest,
): Promise<string | undefined> {
  if (authz.idTokenHint === undefined) return undefined;
  const hint = await verifyIdTokenHint(services, authz.idTokenHint);
  if (!hint || hint.aud !== client.clientId)
    throw refuseToClient('invalid_request', 'id_token_hint is not an ID token this server issued to this client');
  return hint.sub;
}
