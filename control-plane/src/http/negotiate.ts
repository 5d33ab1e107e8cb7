import type { FastifyRequest } from 'fastify';

/**
 * The one content-negotiation rule for routes that answer with a page or JSON: `format=json` or
 * `format=html` in the query decides; otherwise JSON only when Accept names it and not text/html
 * (a browser's navigation Accept names text/html, fetch() from our scripts sends application/json).
 */
export function wantsJson(request: FastifyRequest): boolean {
  const format = (request.query as Record<string, unknown> | undefined)?.['format'];
  if (format === 'json') return true;
  if (format === 'html') return false;
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

/** A browser navigating to a page (GET asking for text/html): guards answer it with a redirect instead of an error. */
export function isPageNavigation(request: FastifyRequest): boolean {
  return request.method === 'GET' && !wantsJson(request) && (request.headers.accept ?? '').includes('text/html');
}

/** A plain HTML form post (no JavaScript): answer with pages and redirects instead of JSON. */
export function isHtmlFormPost(request: FastifyRequest): boolean {
  const type = request.headers['content-type'] ?? '';
  const accept = request.headers.accept ?? '';
  return type.startsWith('application/x-www-form-urlencoded') && accept.includes('text/html');
}
