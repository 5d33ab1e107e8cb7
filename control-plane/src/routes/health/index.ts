import type { FastifyInstance } from 'fastify';
import { checkReadiness } from '../../health/readiness.js';
import { errorResponses, okObject } from '../../http/schemas.js';

export default async function healthRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Liveness: the process answers',
        response: { 200: okObject({ status: { type: 'string' } }), ...errorResponses },
      },
    },
    async () => ({ ok: true, status: 'alive' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        summary: 'Readiness: storage answers and the signing keys are loaded',
        response: {
          200: okObject({ storage: { type: 'string' }, keys: { type: 'string' }, state: { type: 'string' } }),
          ...errorResponses,
        },
      },
    },
    async () => {
      const { state } = await checkReadiness(app.kp);
      return { ok: true, storage: 'ok', keys: 'ok', state };
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics (text exposition format)',
        produces: ['text/plain'],
      },
    },
    async (_request, reply) => {
      reply.type(app.kp.metrics.contentType);
      return app.kp.metrics.metrics();
    },
  );
}
