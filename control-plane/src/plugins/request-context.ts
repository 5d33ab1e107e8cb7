import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { randomToken } from '#lib/crypto/random.js';
import type { RequestContext } from '../context.js';

/**
 * `request.kp` of one request. The CSP nonce is made the first time a page or the CSP header of
 * an HTML answer asks for it, so a machine endpoint, which renders no page, never pays for the
 * random bytes, and any HTML answer still gets a nonce of its own.
 */
class RequestState implements RequestContext {
  #cspNonce: string | undefined;
  constructor(readonly requestId: string) {}
  get cspNonce(): string {
    return (this.#cspNonce ??= randomToken(16, 'base64'));
  }
}

/** Fills the one request-scoped slot and echoes the request id: all that every route needs. */
export const requestContextPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest('kp', null as never);
    // A callback hook, not an async one: this runs on every request, and needs no promise.
    app.addHook('onRequest', (request, reply, done) => {
      request.kp = new RequestState(request.id);
      reply.header('x-request-id', request.id);
      done();
    });
  },
  { name: 'keyplane-request-context' },
);
