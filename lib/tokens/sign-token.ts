import { SignJWT, type JWTPayload } from 'jose';
import type { AccessTokenClaims, IdTokenClaims } from './claims.js';

/** What the key ring's `current()` returns: a kid and a private key (KeyObject or WebCrypto CryptoKey). */
export interface TokenSigningKey {
  kid: string;
  privateKey: Parameters<SignJWT['sign']>[0];
}

async function sign(claims: object, key: TokenSigningKey, typ: string): Promise<string> {
  return new SignJWT(claims as JWTPayload).setProtectedHeader({ alg: 'ES256', kid: key.kid, typ }).sign(key.privateKey);
}

/** Signs an ID token: ES256, `kid` from the JWKS, `typ: JWT`. */
export function signIdToken(claims: IdTokenClaims, key: TokenSigningKey): Promise<string> {
  return sign(claims, key, 'JWT');
}

/** Signs an access token: ES256, `kid` from the JWKS, `typ: at+jwt` (RFC 9068 §2.1). */
export function signAccessToken(claims: AccessTokenClaims, key: TokenSigningKey): Promise<string> {
  return sign(claims, key, 'at+jwt');
}
