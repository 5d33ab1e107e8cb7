import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { rememberRequestedLocale, requestLocale } from '../pages/ui.js';

/**
 * Remembers an explicit choice of language (`?lang=` of the switcher, `ui_locales` of an
 * authorization request) in the `kp_lang` cookie, for the pages that follow, and sets
 * `request.kp.locale`, which every page and refusal page renders in (docs/i18n.md).
 */
export const localePlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', async (request, reply) => {
      rememberRequestedLocale(app.kp, request, reply);
      request.kp.locale = await requestLocale(app.kp, request);
    });
  },
  { name: 'keyplane-locale', dependencies: ['keyplane-session'] },
);
