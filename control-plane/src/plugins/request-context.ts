import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { randomToken } from '#lib/crypto/random.js';

/** Fills the one request-scoped slot and echoes the request id. */
export const requestContextPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('kp', null as never);
    app.addHook('onRequest', async (request, reply) => {
      request.kp = { requestId: request.id, cspNonce: randomToken(16, 'base64') };
      reply.header('x-request-id', request.id);
    });
  },
  { name: 'keyplane-request-context' },
);
