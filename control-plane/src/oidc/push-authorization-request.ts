import { apiAccessFor } from '../apis/apis.js';
import type { ControlPlaneServices } from '../context.js';
import { checkAuthorizationRequest, type RawParams } from '#lib/oauth/authorization-request.js';
import { oauthError } from '#lib/oauth/errors.js';
import {
  PUSHED_REQUEST_LIFETIME_SECONDS,
  bindPushedDpop,
  pushedParamsOf,
  pushedRequestUri,
} from '#lib/oauth/pushed-request.js';
import { randomToken } from '#lib/crypto/random.js';
import type { StoredClient } from '../storage/interface.js';
import { authorizationClientOf } from './authorization-client.js';
import { requestableResources } from './mcp-resources.js';
import {
  pushedRequestKey,
  resolveAuthorizationRequest,
  type ResolveServices,
} from './resolve-authorization-request.js';

export interface PushedRequest {
  requestUri: string;
  expiresIn: number;
}

/**
 * RFC 9126 §2: checks a pushed authorization request as the authorization endpoint would (a
 * signed request object inside is verified now), binds it to the DPoP key that came with it
 * (RFC 9449 §10.1), and stores it for one use within {@link PUSHED_REQUEST_LIFETIME_SECONDS}.
 * Problems are answered here, as errors of this endpoint (§2.3), never redirected.
 */
export async function pushAuthorizationRequest(
  services: ResolveServices & Pick<ControlPlaneServices, 'storage'>,
  client: StoredClient,
  body: RawParams,
  proofJkt: string | null,
): Promise<PushedRequest> {
  const pushed = pushedParamsOf(body, client.clientId);
  if (!pushed.ok) throw oauthError('invalid_request', pushed.description);
  const resolved = await resolveAuthorizationRequest(services, client, pushed.params, 'par');
  if (!resolved.ok) throw oauthError('invalid_request', resolved.description, { error: resolved.error });
  const bound = bindPushedDpop(resolved.params, proofJkt);
  if (!bound.ok) throw oauthError('invalid_request', bound.description);
  const resources = await requestableResources(services, client, bound.params.resource);
  const api = await apiAccessFor(services, client, bound.params.resource);
  const check = checkAuthorizationRequest(bound.params, authorizationClientOf(client, resources, api));
  if (!check.ok) {
    // RFC 9126 §2.3: an unregistered redirect_uri is invalid_request here; the rest keep their codes.
    if (check.target === null) throw oauthError('invalid_request', check.description);
    throw oauthError('invalid_request', check.description, { error: check.error });
  }
  if (check.request.responseMode === 'web_message' && client.metadata.in_place !== true)
    throw oauthError('invalid_request', 'response_mode=web_message needs in-place sign-in turned on');
  const id = randomToken(32);
  await services.state.set(
    pushedRequestKey(id),
    JSON.stringify({ clientId: client.clientId, params: bound.params }),
    PUSHED_REQUEST_LIFETIME_SECONDS * 1000,
  );
  return { requestUri: pushedRequestUri(id), expiresIn: PUSHED_REQUEST_LIFETIME_SECONDS };
}
