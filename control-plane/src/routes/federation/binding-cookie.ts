import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomToken } from '#lib/crypto/random.js';
import { cookieOptions, isHttpsIssuer, wellFormedToken, type CookieServices } from '../../sessions/cookies.js';

/** A pending sign-in and its upstream round trip are bound to the browser by this cookie (docs/federation.md#signing-in). */
const MAX_AGE_SECONDS = 30 * 60;

const name = (kp: CookieServices) => (isHttpsIssuer(kp) ? '__Host-kp_fed' : 'kp_fed');

export const bindingCookie = {
  read(kp: CookieServices, request: FastifyRequest): string | undefined {
    const value = request.cookies?.[name(kp)];
    return wellFormedToken(value) ? value : undefined;
  },
  /**
   * This browser's binding value, minted on the reply when it has none. `SameSite=Lax`: the
   * upstream's redirect back is a top-level navigation, which carries it.
   */
  ensure(kp: CookieServices, request: FastifyRequest, reply: FastifyReply): string {
    const existing = bindingCookie.read(kp, request);
    if (existing) return existing;
    const token = randomToken(32);
    reply.setCookie(name(kp), token, cookieOptions(kp, MAX_AGE_SECONDS));
    (request.cookies as Record<string, string>)[name(kp)] = token;
    return token;
  },
};
