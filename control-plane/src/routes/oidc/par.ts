import type { FastifyInstance } from 'fastify';
import { pushAuthorizationRequest } from '../../oidc/push-authorization-request.js';
import { checkDpopHeader } from '../../oidc/dpop-header.js';
import { readTokenRequestBody } from '../../oidc/token-request.js';
import { authenticateClient } from '../../clients/authenticate-client.js';
import { limitPerIp } from '../../http/code-guard.js';
import { errorResponses } from '../../http/schemas.js';

export const PAR_PATH = '/auth/par';

/**
 * `POST /auth/par` (RFC 9126 §2): the client authenticates as at the token endpoint (public
 * clients by `client_id`), pushes its authorization parameters and gets a one-use `request_uri`.
 */
export default async function parRoutes(app: FastifyInstance): Promise<void> {
  app.post(
    PAR_PATH,
    {
      config: {
        discovery: {
          endpoint: 'pushed_authorization_request_endpoint',
          // RFC 9126 §5: server-wide the push is optional; a client's metadata may require it.
          metadata: { require_pushed_authorization_requests: false },
        },
      },
      schema: {
        tags: ['oidc'],
        summary:
          'Pushed authorization request (RFC 9126): authorization parameters in, a one-use request_uri (60 s) out; a DPoP proof binds the code to its key',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: { type: 'object', additionalProperties: true },
        response: {
          201: {
            type: 'object',
            required: ['request_uri', 'expires_in'],
            properties: { request_uri: { type: 'string' }, expires_in: { type: 'integer' } },
            additionalProperties: false,
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const body = readTokenRequestBody(request.body);
      await limitPerIp(app.kp, request, 'par');
      const client = await authenticateClient(app.kp, request.headers.authorization, body);
      const proof = await checkDpopHeader(app.kp, request, reply, PAR_PATH, 'token');
      const pushed = await pushAuthorizationRequest(app.kp, client, body, proof?.jkt ?? null);
      return reply.code(201).send({ request_uri: pushed.requestUri, expires_in: pushed.expiresIn });
    },
  );
}
