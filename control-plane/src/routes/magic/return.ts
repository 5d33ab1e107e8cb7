import type { FastifyInstance } from 'fastify';
import { sameOriginReturn } from '../../../../lib/magic/magic-link.js';

/**
 * Where a magic link may send the browser after sign-in: the validated target, or null.
 *
 * Today only paths on the issuer itself are accepted (`/account`, `/auth/authorize?…` to resume
 * an authorization request), given as a path or as an absolute URL with the issuer's origin.
 * EXTENSION POINT for the OIDC work: also accept the exact redirect URIs registered by relying
 * parties (look the URI up among registered clients and return it unchanged when it matches
 * exactly). Everything else — other origins, `//host`, `javascript:` — stays refused.
 */
export async function isAllowedReturn(app: FastifyInstance, url: string): Promise<string | null> {
  return sameOriginReturn(url, app.kp.config.issuer);
}
