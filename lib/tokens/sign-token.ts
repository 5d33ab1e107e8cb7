import type { KeyObject } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { SignJWT, type JWTPayload } from 'jose';
import type { AccessTokenClaims, IdTokenClaims } from './claims.js';

/** What the key ring's `current()` returns: a kid and a private key (KeyObject or WebCrypto CryptoKey). */
export interface TokenSigningKey {
  kid: string;
  privateKey: Parameters<SignJWT['sign']>[0];
  /**
   * The same key as a node:crypto KeyObject. When present, tokens are signed through fast-jwt,
   * which signs with node:crypto directly: about a third of the CPU of jose's WebCrypto path
   * per ES256 token (docs/performance.md#tokens-npm-run-benchtoken).
   */
  keyObject?: KeyObject;
}

type Signer = (payload: object) => string;

/** One signer per key and `typ`, made once: fast-jwt checks the key when the signer is built. */
const signers = new WeakMap<KeyObject, Map<string, Signer>>();

function fastSigner(key: KeyObject, kid: string, typ: string): Signer {
  let byTyp = signers.get(key);
  if (!byTyp) signers.set(key, (byTyp = new Map()));
  let signer = byTyp.get(typ);
  if (!signer) {
    const pem = key.export({ format: 'pem', type: 'pkcs8' }) as string;
    // The claims carry their own iat and exp (lib/tokens/claims.ts): fast-jwt keeps the given iat.
    signer = createSigner({ key: pem, algorithm: 'ES256', kid, header: { alg: 'ES256', typ } });
    byTyp.set(typ, signer);
  }
  return signer;
}

async function sign(claims: object, key: TokenSigningKey, typ: string): Promise<string> {
  if (key.keyObject) return fastSigner(key.keyObject, key.kid, typ)(claims);
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

/**
 * Signs a userinfo response for a client registered with `userinfo_signed_response_alg` (OIDC
 * Core §5.3.2): ES256 with the `kid`, and no `typ`, so it can never pass for an ID token (`typ:
 * JWT`) or an access token (`typ: at+jwt`).
 */
export function signUserinfoResponse(claims: JWTPayload, key: TokenSigningKey): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: key.kid }).sign(key.privateKey);
}
