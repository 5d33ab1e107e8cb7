import type { FastifyInstance } from 'fastify';
import authorizeRoutes from './authorize.js';
import directGrantRoutes from './direct.js';
import logoutRoutes from './logout.js';
import parRoutes, { PAR_PATH } from './par.js';
import deviceRoutes, { DEVICE_AUTHORIZATION_PATH } from './device.js';
import oidcResourceRoutes from './resources.js';
import tokenRoutes from './token.js';
import { sameOriginReferrerArea } from '../../plugins/security-headers.js';
import { purgeExpiredTokens } from '../../oidc/revoke-introspect.js';

const OAUTH_PATHS = new Set(['/auth/token', '/auth/revoke', '/auth/introspect', PAR_PATH, DEVICE_AUTHORIZATION_PATH]);
/** Endpoints a browser-based public client calls from its own origin (never with cookies). */
const CORS_PATHS = ['/auth/token', '/auth/revoke', '/auth/userinfo', PAR_PATH];

/**
 * Errors of the token, revocation and introspection endpoints carry the RFC 6749 §5.2
 * `error` / `error_description` pair beside the envelope (docs/errors.md#oauth-endpoints): the
 * error handler adds it for routes marked here, also for failures raised before the handler.
 */
function markOauthErrorRoutes(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (OAUTH_PATHS.has(route.url)) route.config = { ...(route.config ?? {}), oauthErrors: true };
  });
}

/**
 * The OpenID Connect provider's machine endpoints: token, PAR, userinfo, revocation and
 * introspection, each advertised in discovery by its route. They read no session cookie and render
 * no page, so they sit outside the page context (app.ts); the browser's side is `oidcPageRoutes`.
 */
export default async function oidcRoutes(app: FastifyInstance): Promise<void> {
  markOauthErrorRoutes(app);
  // Used codes, refresh tokens past their idle end and revoked-token markers are dropped hourly.
  const purge = setInterval(() => void purgeExpiredTokens(app.kp).catch(() => undefined), 3_600_000).unref();
  app.addHook('onClose', async () => clearInterval(purge));
  // CORS for browser-based clients: only origins of registered redirect URIs, no credentials (the
  // session cookie is never part of these calls), and the headers RFC 9449 §7.1 says to expose.
  async function allowedOrigin(origin: string | undefined): Promise<boolean> {
    if (origin === undefined || origin === 'null') return false;
    return app.kp.clientOrigins.registered(origin);
  }
  app.addHook('onSend', async (request, reply, payload) => {
    if (!CORS_PATHS.includes(request.routeOptions.url ?? '') || request.method === 'OPTIONS') return payload;
    const origin = request.headers.origin;
    if (await allowedOrigin(origin)) {
      reply.header('access-control-allow-origin', origin!);
      reply.header('access-control-expose-headers', 'WWW-Authenticate, DPoP-Nonce');
    }
    reply.header('vary', 'Origin');
    return payload;
  });
  for (const path of CORS_PATHS) {
    app.options(
      path,
      {
        schema: { tags: ['oidc'], summary: `CORS preflight for ${path} (registered client origins only)`, hide: true },
      },
      async (request, reply) => {
        const origin = request.headers.origin;
        reply.header('vary', 'Origin');
        if (await allowedOrigin(origin)) {
          reply.header('access-control-allow-origin', origin!);
          reply.header('access-control-allow-methods', path === '/auth/userinfo' ? 'GET, POST' : 'POST');
          reply.header('access-control-allow-headers', 'Authorization, Content-Type, DPoP');
          reply.header('access-control-max-age', '600');
        }
        return reply.code(204).send();
      },
    );
  }
  await app.register(tokenRoutes);
  await app.register(parRoutes);
  await app.register(oidcResourceRoutes);
}

/**
 * The browser's side of the provider: authorize and its pages, the direct grant, the device grant
 * (its verification page and, beside it, its authorization endpoint) and RP-initiated logout.
 */
export async function oidcPageRoutes(app: FastifyInstance): Promise<void> {
  markOauthErrorRoutes(app);
  // Its pages (one-tap approval, not admitted, device code, logout confirmation) post back with the session.
  sameOriginReferrerArea(app);
  await app.register(authorizeRoutes);
  await app.register(directGrantRoutes);
  await app.register(deviceRoutes);
  await app.register(logoutRoutes);
}
