import type { KeyObject, webcrypto } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { signJwt } from '../crypto/jwt.js';
import type { AccessTokenClaims, ClientAccessTokenClaims, IdTokenClaims } from './claims.js';

/** What the key ring's `current()` returns: a kid and a private key (KeyObject or WebCrypto CryptoKey). */
export interface TokenSigningKey {
  kid: string;
  privateKey: KeyObject | webcrypto.CryptoKey;
  /**
   * The same key as a node:crypto KeyObject, when the ring has one: tokens are signed through
   * fast-jwt with node:crypto directly (lib/crypto/jwt.ts), about a third of the CPU of jose's
   * WebCrypto path per ES256 token (docs/performance.md#tokens-npm-run-benchtoken).
   */
  keyObject?: KeyObject;
}

function sign(claims: object, key: TokenSigningKey, typ: string | undefined): Promise<string> {
  return Promise.resolve(
    signJwt(
      { kid: key.kid, ...(typ ? { typ } : {}) },
      claims as Record<string, unknown>,
      key.keyObject ?? key.privateKey,
      'ES256',
    ),
  );
}

/** Signs an ID token: ES256, `kid` from the JWKS, `typ: JWT`. */
export function signIdToken(claims: IdTokenClaims, key: TokenSigningKey): Promise<string> {
  return sign(claims, key, 'JWT');
}

/** Signs an access token: ES256, `kid` from the JWKS, `typ: at+jwt` (RFC 9068 §2.1). */
export function signAccessToken(
  claims: AccessTokenClaims | ClientAccessTokenClaims,
  key: TokenSigningKey,
): Promise<string> {
  return sign(claims, key, 'at+jwt');
}

/**
 * Signs a userinfo response for a client registered with `userinfo_signed_response_alg` (OIDC
 * Core §5.3.2): ES256 with the `kid`, and no `typ`, so it can never pass for an ID token (`typ:
 * JWT`) or an access token (`typ: at+jwt`).
 */
export function signUserinfoResponse(claims: JWTPayload, key: TokenSigningKey): Promise<string> {
  return sign(claims, key, undefined);
}
