import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';

// Methods whose requests carry no content by definition (RFC 9110 §9.3): many HTTP clients still
// send `Content-Type: application/json` on them, with nothing after it.
const BODILESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/**
 * Fastify's JSON parser, except that an empty body on a bodiless method is no body at all rather
 * than 400 "Body cannot be empty", and on a route that declares no body (an action such as
 * `POST …/rotate-secret`, sent by curl with `Content-Type: application/json` and nothing after
 * it) it is `{}`, what such a route already takes. Every other request is parsed exactly as
 * before, with the same prototype-poisoning rules and body limit: a route with a body schema still
 * refuses an empty body.
 */
export const jsonBodyPlugin = fp(
  async (app: FastifyInstance) => {
    const parseJson = app.getDefaultJsonParser('error', 'ignore');
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '' && BODILESS.has(request.method)) return done(null, undefined);
      if (body === '' && request.routeOptions.schema?.body === undefined) return done(null, {});
      return parseJson(request, body as string, done);
    });
  },
  { name: 'keyplane-json-body' },
);
