import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { localePlugin } from './locale.js';
import { sessionPlugin } from './session.js';

/**
 * What the browser's routes need and the machine endpoints do not: the session cookie (and the
 * Origin check of signed-in state-changing requests) and the page language. app.ts registers it
 * inside the encapsulated context of each area that serves a browser, never on the root, so the
 * token, userinfo, introspection, JWKS, discovery, health, receipts, gateway and MCP endpoints
 * run none of its hooks (docs/architecture.md#hooks-only-where-they-are-needed).
 */
export const pageContextPlugin = fp(
  async (app: FastifyInstance) => {
    await app.register(sessionPlugin);
    await app.register(localePlugin);
  },
  { name: 'keyplane-page-context', dependencies: ['keyplane-request-context', 'keyplane-errors'] },
);
