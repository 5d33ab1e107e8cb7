import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { DEPENDENCIES } from '#lib/errors/dependency-outage.js';

/**
 * Says in the log, once, that PostgreSQL or Redis went away and, once, that it is back: the
 * requests that fail meanwhile answer 503 `unavailable` (plugins/errors.ts) without a line each.
 * Both lines are warnings, so an operator who keeps only warnings sees where each outage ends.
 */
export const dependenciesPlugin = fp(
  async (app: FastifyInstance) => {
    const stop = app.kp.dependencies.listen({
      down: (dependency, failure) =>
        app.log.warn(
          { event: 'dependency.down', dependency, kind: failure.kind, detail: failure.detail },
          `${DEPENDENCIES[dependency]} went away; requests that need it answer 503 until it is back`,
        ),
      up: (dependency, downMs) =>
        app.log.warn({ event: 'dependency.up', dependency, downMs }, `${DEPENDENCIES[dependency]} is back`),
    });
    app.addHook('onClose', async () => stop());
  },
  { name: 'keyplane-dependencies' },
);
