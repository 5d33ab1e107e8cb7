import fp from 'fastify-plugin';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

/** Fills the one request-scoped slot and echoes the request id. */
export const requestContextPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('kp', null as never);
    app.addHook('onRequest', async (request, reply) => {
      request.kp = { requestId: request.id, cspNonce: randomBytes(16).toString('base64') };
      reply.header('x-request-id', request.id);
    });
  },
  { name: 'keyplane-request-context' },
);
