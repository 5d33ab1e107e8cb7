import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
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

const STATE = Symbol('keyplane.requestState');

/**
 * The one request-scoped slot, `request.kp`, made the first time a hook or route reads it: no hook
 * runs on every request to fill it (a `/healthz` answer never reads it). The request id is echoed
 * with the other response headers (plugins/security-headers.ts).
 */
export const requestContextPlugin = fp(
  async (app: FastifyInstance) => {
    app.decorateRequest(STATE, null);
    app.decorateRequest('kp', {
      getter(this: FastifyRequest): RequestContext {
        const request = this as FastifyRequest & { [STATE]: RequestState | null };
        return (request[STATE] ??= new RequestState(request.id));
      },
    });
  },
  { name: 'keyplane-request-context' },
);
