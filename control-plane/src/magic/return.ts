import { sameOriginReturn } from '#lib/magic/magic-link.js';
import type { ControlPlaneServices } from '../context.js';

/** What these functions read. */
export type ReturnServices = Pick<ControlPlaneServices, 'config' | 'storage'>;

/**
 * Where a magic link may send the browser after sign-in: the validated target, or null.
 *
 * Accepted: paths on the issuer itself (`/account`, `/auth/authorize?…` to resume an
 * authorization request), as a path or an absolute URL with the issuer's origin; and a redirect
 * URI some relying party registered, matched exactly as authorize matches them. Everything
 * else — other origins, near misses, `//host`, `javascript:` — is refused.
 */
export async function isAllowedReturn(services: ReturnServices, url: string): Promise<string | null> {
  const local = sameOriginReturn(url, services.config.issuer);
  if (local !== null) return local;
  const registered = await services.storage.clients.allRedirectUris();
  return registered.includes(url) ? url : null;
}
