import { signJwt } from '../crypto/jwt.js';
import type { TokenSigningKey } from './sign-token.js';

/** OpenID Connect Back-Channel Logout 1.0 §2.4: the event member of every logout token. */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** §2.4 logout token claims. `nonce` is never present (§2.4: it is prohibited, so a logout token cannot pass for an ID token). */
export interface LogoutTokenClaims {
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
  sub: string;
  sid: string;
  events: { [BACKCHANNEL_LOGOUT_EVENT]: Record<string, never> };
}

/**
 * The claims of a logout token for one client and one ended session. Both `sub` and `sid` are
 * always stated, so `backchannel_logout_session_required` is honoured for every client.
 */
export function buildLogoutTokenClaims(input: {
  issuer: string;
  clientId: string;
  subject: string;
  sessionId: string;
  jti: string;
  /** ms */
  now: number;
  lifetimeSeconds: number;
}): LogoutTokenClaims {
  const iat = Math.floor(input.now / 1000);
  return {
    iss: input.issuer,
    aud: input.clientId,
    iat,
    exp: iat + input.lifetimeSeconds,
    jti: input.jti,
    sub: input.subject,
    sid: input.sessionId,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
  };
}

/** Signs a logout token: ES256, `kid` from the JWKS, `typ: logout+jwt` (§2.4, so it is never mistaken for an ID token). */
export function signLogoutToken(claims: LogoutTokenClaims, key: TokenSigningKey): Promise<string> {
  return Promise.resolve(
    signJwt({ kid: key.kid, typ: 'logout+jwt' }, { ...claims }, key.keyObject ?? key.privateKey, 'ES256'),
  );
}
