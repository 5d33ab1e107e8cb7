/**
 * The claims of an upstream's back-channel logout token (OpenID Connect Back-Channel Logout 1.0
 * §2.4, §2.6), once its signature, `iss`, `aud` and `iat` verified. Pure: the caller verifies the
 * JWS against the upstream's keys and takes the `jti` once.
 */

/** The event member a logout token must carry (§2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

export type LogoutTokenCheck = { ok: true; jti: string; sid?: string; sub?: string } | { ok: false; refusal: string };

const LIMIT = 255;
const text = (value: unknown): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= LIMIT;

/**
 * §2.6 steps 3–5 and 7: `typ` absent, `JWT` or `logout+jwt` (an ID or access token is never a logout
 * token), `events` holding the back-channel logout member as an object, `sid` or `sub`, a `jti`,
 * and no `nonce` (which would make it usable as an ID token).
 */
export function checkLogoutTokenClaims(claims: Record<string, unknown>, header: { typ?: unknown }): LogoutTokenCheck {
  if (header.typ !== undefined) {
    const typ = typeof header.typ === 'string' ? header.typ.toLowerCase().replace(/^application\//, '') : '';
    if (typ !== 'jwt' && typ !== 'logout+jwt') return { ok: false, refusal: 'the token is not a logout token (typ)' };
  }
  const events = claims.events;
  const event =
    events !== null && typeof events === 'object' && !Array.isArray(events)
      ? (events as Record<string, unknown>)[BACKCHANNEL_LOGOUT_EVENT]
      : undefined;
  if (event === null || typeof event !== 'object' || Array.isArray(event))
    return { ok: false, refusal: 'the logout token carries no back-channel logout event' };
  if (claims.nonce !== undefined) return { ok: false, refusal: 'a logout token must not carry a nonce' };
  if (!text(claims.jti)) return { ok: false, refusal: 'the logout token has no jti' };
  const sid = text(claims.sid) ? claims.sid : undefined;
  const sub = text(claims.sub) ? claims.sub : undefined;
  if (sid === undefined && sub === undefined)
    return { ok: false, refusal: 'the logout token names neither sid nor sub' };
  return { ok: true, jti: claims.jti, ...(sid !== undefined ? { sid } : {}), ...(sub !== undefined ? { sub } : {}) };
}
