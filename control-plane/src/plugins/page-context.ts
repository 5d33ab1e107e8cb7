import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { localePlugin } from './locale.js';
import { sessionPlugin } from './session.js';

/**
 * What the browser's routes need and the machine endpoints do not: the session cookie (and the
 * Origin check of signed-in state-changing requests), the page language, and refusals shown as a
 * page to a browser (`config.errorPage`, by default `'browser'`). app.ts registers it
 * inside the encapsulated context of each area that serves a browser, never on the root, so the
 * token, userinfo, introspection, JWKS, discovery, health, receipts, gateway and MCP endpoints
 * run none of its hooks (docs/architecture.md#hooks-only-where-they-are-needed).
 */
export const pageContextPlugin = fp(
  async (app: FastifyInstance) => {
    // A refusal on a browser's route is a page for a browser (docs/errors.md#one-error-path): every
    // route here that sets nothing gets it, so a new page need not remember; `errorPage: false` opts out.
    app.addHook('onRoute', (route) => {
      if (route.config?.errorPage === undefined) route.config = { ...(route.config ?? {}), errorPage: 'browser' };
    });
    await app.register(sessionPlugin);
    await app.register(localePlugin);
  },
  { name: 'keyplane-page-context', dependencies: ['keyplane-request-context', 'keyplane-errors'] },
);
