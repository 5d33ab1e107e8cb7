import type { FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { buildCorsHeaders, isRegisteredOrigin, type CorsOptions } from '#lib/oauth/in-place.js';
import type { ControlPlaneServices } from '../context.js';
import { findClient } from '../clients/find-client.js';
import { publishedOriginsOf } from '../clients/in-place-origins.js';
import type { StoredClient } from '../storage/interface.js';

/**
 * The CORS preamble FedCM and the direct grant share (docs/in-place.md#one-origin-rule-one-cors-rule): the client named
 * in the request, its origin rule, and the CORS answer. The exact Origin gets CORS headers with
 * credentials only when it is one of the client's registered origins; any other origin gets none
 * and a refusal, and the client must have turned in-place sign-in on.
 */
export async function inPlaceClientFor(
  services: Pick<ControlPlaneServices, 'storage'>,
  request: FastifyRequest,
  reply: FastifyReply,
  clientId: unknown,
): Promise<{ client: StoredClient; origin: string }> {
  const client = typeof clientId === 'string' && clientId.length > 0 ? await findClient(services, clientId) : null;
  const origin = request.headers.origin;
  const registered = client !== null && isRegisteredOrigin(client.metadata, origin);
  // An in-place client's origin gets CORS only once published (an account's client: under a proved domain).
  const allowed =
    registered && (client.metadata.in_place !== true || (await publishedOriginsOf(services, client)).includes(origin));
  reply.headers(buildCorsHeaders(origin, allowed));
  if (!client) throw fail('not_found', 'no such client');
  if (!registered)
    throw fail(
      'origin_mismatch',
      origin ? 'this origin is not registered for the client' : 'the request carries no Origin',
    );
  if (!allowed)
    throw fail(
      'origin_mismatch',
      'this origin is used in place only once the operator registers the client or an org you administer proves its domain (docs/in-place.md#origins)',
    );
  if (client.metadata.in_place !== true)
    throw fail('in_place_disabled', 'the client has not turned in-place sign-in on');
  return { client, origin };
}

/**
 * A CORS preflight before the client is known (the body names it): any registered origin of an
 * in-place client passes; the request itself is then checked against its own client.
 */
export async function inPlacePreflight(
  services: Pick<ControlPlaneServices, 'clientOrigins'>,
  request: FastifyRequest,
  reply: FastifyReply,
  options: CorsOptions,
): Promise<FastifyReply> {
  const origin = request.headers.origin;
  const allowed = origin !== undefined && (await services.clientOrigins.inPlace()).includes(origin);
  return reply
    .code(204)
    .headers(buildCorsHeaders(origin, allowed, options))
    .send();
}
