import type { FastifyInstance } from 'fastify';

// Methods whose requests carry no content by definition (RFC 9110 §9.3): many HTTP clients still
// send `Content-Type: application/json` on them, with nothing after it.
const BODILESS = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS']);

/**
 * Fastify's JSON parser, except that an empty body on a bodiless method is no body at all rather
 * than 400 "Body cannot be empty". Every other request is parsed exactly as before, with the same
 * prototype-poisoning rules and body limit.
 */
export function acceptEmptyJsonOnBodilessMethods(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && BODILESS.has(request.method)) return done(null, undefined);
    return parseJson(request, body as string, done);
  });
}
