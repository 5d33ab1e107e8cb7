import type { FastifyRequest } from 'fastify';

/** True when the caller asked for JSON rather than a page (`Accept: application/json`, or `format=json`). */
export function wantsJson(request: FastifyRequest): boolean {
  if ((request.query as Record<string, unknown> | undefined)?.['format'] === 'json') return true;
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

/** A plain HTML form post (no JavaScript): answer with pages and redirects instead of JSON. */
export function isHtmlFormPost(request: FastifyRequest): boolean {
  const type = request.headers['content-type'] ?? '';
  const accept = request.headers.accept ?? '';
  return type.startsWith('application/x-www-form-urlencoded') && accept.includes('text/html');
}
