import fp from 'fastify-plugin';
import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { meetsAssurance, type AssuranceLevel } from '#lib/assurance/assurance.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { checkRequestOrigin, type RequestOriginHeaders } from '#lib/http/check-request-origin.js';
import { presentsAdminToken } from '#lib/http/admin-token.js';
import { ADMIN_TOKEN } from '../events/types.js';
import { isPageNavigation } from '../http/negotiate.js';
import {
  type CookieServices,
  FEDCM_COOKIE_PATH,
  fedcmCookieName,
  sessionCookieName,
  wellFormedToken,
} from '../sessions/cookies.js';
import { lookUpPresentedSession } from '../sessions/present-session.js';
import { clearSessionCookie } from '../http/session-cookies.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route checks the caller's origin itself (FedCM, the CORS-scoped direct grant), so the
     * session plugin's issuer-only Origin check is skipped for it. Such a route must compare
     * `Origin` with the origins registered for the client.
     */
    checksOwnOrigin?: boolean;
    /**
     * The operator's admin token passes `requireSessionOrAdminToken` on this route as well as a
     * session (docs/orgs.md#teams): the token acts on any org.
     */
    acceptsAdminToken?: boolean;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Reads the session cookie into `request.kp.session` and checks where every state-changing request
 * that carries a live session comes from (docs/security.md#csrf-on-forms: SameSite=Lax plus Fetch Metadata,
 * then Origin). Requests without a session are left alone: they cannot act for anyone.
 */
export const sessionPlugin = fp(
  async (app: FastifyInstance) => {
    if (!app.hasRequestDecorator('cookies')) await app.register(cookie);
    const issuerOrigin = new URL(app.kp.config.issuer).origin;

    app.addHook('onRequest', async (request, reply) => {
      // The FedCM cookie counts only on the FedCM endpoints (its path), whatever the browser sends.
      const token =
        request.cookies[sessionCookieName(app.kp)] ??
        (request.url.startsWith(FEDCM_COOKIE_PATH) ? request.cookies[fedcmCookieName(app.kp)] : undefined);
      if (token === undefined) return;
      if (!wellFormedToken(token)) {
        clearSessionCookie(app.kp, reply);
        return;
      }
      const found = await lookUpPresentedSession(app.kp, token);
      if (!found.live) {
        // A token renewed away a moment ago is refused, but its cookie not cleared: the browser holds the new one.
        if (!found.renewedAway) clearSessionCookie(app.kp, reply);
        return;
      }
      // What a renewal of this session's token must replace (sessions/renew-session.ts).
      request.kp.sessionTokenHash = found.tokenHash;
      request.kp.session = found.view;
      if (!SAFE_METHODS.has(request.method) && request.routeOptions.config?.checksOwnOrigin !== true)
        checkRequestOrigin(originHeaders(request), { expectedOrigin: issuerOrigin, originRequired: true });
    });
  },
  { name: 'keyplane-session', dependencies: ['keyplane-request-context', 'keyplane-errors'] },
);

/**
 * For sign-in POSTs that carry no session yet (recovery code, magic-link request): a browser's
 * request must come from our own pages (no login CSRF); API callers send neither Fetch Metadata
 * nor Origin and pass.
 */
export function checkSignInOrigin(kp: CookieServices, request: FastifyRequest): void {
  checkRequestOrigin(originHeaders(request), {
    expectedOrigin: new URL(kp.config.issuer).origin,
    originRequired: false,
  });
}

function originHeaders(request: FastifyRequest): RequestOriginHeaders {
  const site = request.headers['sec-fetch-site'];
  return { secFetchSite: typeof site === 'string' ? site : undefined, origin: request.headers.origin };
}

function sendToSignIn(reply: FastifyReply): FastifyReply {
  return reply.redirect('/auth', 303);
}

/** A hook usable as `onRequest` (before body validation, so anonymous callers learn nothing) or `preHandler`. */
export type SessionGuard = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** Guard: a live session is required (401 `unauthorized`, or for HTML GETs a redirect to /auth). */
export const requireSession: SessionGuard = async function (request, reply) {
  if (request.kp.session) return;
  if (isPageNavigation(request)) return sendToSignIn(reply);
  throw fail('unauthorized', 'sign in first');
};

/**
 * Guard for a subtree some of whose routes (config `acceptsAdminToken`) the operator's admin token may
 * call too: there the token sets `request.kp.operator` and a wrong one is 401 (never a fallback
 * to the session); everywhere else, and without an Authorization header, `requireSession`.
 */
export const requireSessionOrAdminToken: SessionGuard = async function (request, reply) {
  if (
    request.routeOptions.config?.acceptsAdminToken === true &&
    presentsAdminToken(request.server.kp.config.adminToken, request.headers.authorization)
  ) {
    request.kp.operator = { actor: ADMIN_TOKEN };
    return;
  }
  return requireSession(request, reply);
};

/** Guard: a live session at `level` or stronger (403 `insufficient_assurance`, or for HTML GETs the step-up page). */
export function requireAssurance(level: AssuranceLevel): SessionGuard {
  return async function (request, reply) {
    const session = request.kp.session;
    if (!session) {
      if (isPageNavigation(request)) return sendToSignIn(reply);
      throw fail('unauthorized', 'sign in first');
    }
    if (meetsAssurance(session.assurance, level)) return;
    if (isPageNavigation(request))
      return reply.redirect(`/auth/step-up?return=${encodeURIComponent(request.url)}`, 303);
    throw fail('insufficient_assurance', `this needs a ${level} session; step up at /auth/step-up`, {
      fields: { required: level, stepUp: '/auth/step-up' },
    });
  };
}
