import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';

/**
 * Headers every response carries: the request id (plugins/request-context.ts), and for security:
 * HTML gets a nonce-based CSP so no script runs without the
 * page's nonce; everything else gets `default-src 'none'`. Nothing may frame us.
 */
export function contentSecurityPolicy(
  nonce: string,
  extra: { formAction?: string[]; imgSrc?: string[]; frameSrc?: string[] } = {},
): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' 'strict-dynamic'`,
    `style-src 'self' 'nonce-${nonce}'`,
    `img-src 'self' data:${extra.imgSrc?.length ? ' ' + extra.imgSrc.join(' ') : ''}`,
    "connect-src 'self'",
    "font-src 'self'",
    `form-action 'self'${extra.formAction?.length ? ' ' + extra.formAction.join(' ') : ''}`,
    ...(extra.frameSrc?.length ? [`frame-src ${extra.frameSrc.join(' ')}`] : []),
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The headers of a data response, for a route that writes to the raw response itself (a hijacked
 * reply skips the onSend hook below).
 */
export function rawDataHeaders(https: boolean): Record<string, string> {
  return {
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'content-security-policy': API_CSP,
    'cache-control': 'no-store',
    ...(https ? { 'strict-transport-security': 'max-age=63072000; includeSubDomains' } : {}),
  };
}

/** The referrer policy of a route's answers: `no-referrer`, or `same-origin` on a route whose pages post back. */
export function referrerPolicyOf(config: { sameOriginReferrer?: boolean } | undefined): ReferrerPolicy {
  return config?.sameOriginReferrer ? 'same-origin' : 'no-referrer';
}

export type ReferrerPolicy = 'no-referrer' | 'same-origin';

/**
 * Marks every route of an area (the encapsulated context `app`) as one whose pages post forms back
 * with the session (`config.sameOriginReferrer`), when the routes are added: nothing runs per request.
 */
export function sameOriginReferrerArea(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), sameOriginReferrer: true };
  });
}

export const securityHeadersPlugin = fp(
  async (app: FastifyInstance, options: { https: boolean }) => {
    // A callback hook, not an async one: every response passes here, and it needs no promise.
    app.addHook('onSend', (request, reply, payload, done) => {
      reply.header('x-request-id', request.id);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('x-frame-options', 'DENY');
      reply.header('referrer-policy', referrerPolicyOf(request.routeOptions.config));
      if (options.https) reply.header('strict-transport-security', 'max-age=63072000; includeSubDomains');
      if (!reply.hasHeader('content-security-policy')) {
        const type = String(reply.getHeader('content-type') ?? '');
        // The page's nonce (made on first use, plugins/request-context.ts), so its scripts run and no other.
        reply.header(
          'content-security-policy',
          type.startsWith('text/html') ? contentSecurityPolicy(request.kp?.cspNonce ?? 'none') : API_CSP,
        );
      }
      if (!reply.hasHeader('cache-control'))
        reply.header('cache-control', request.routeOptions.config?.cache ?? 'no-store');
      done(null, payload);
    });
  },
  { name: 'keyplane-security-headers', dependencies: ['keyplane-request-context'] },
);
