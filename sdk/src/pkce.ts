import { createHash, randomBytes } from 'node:crypto';

/** 256 random bits as base64url: PKCE verifiers, `state` and `nonce`. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** RFC 7636 §4.2 S256: BASE64URL(SHA-256(ASCII(code_verifier))). */
export function s256Challenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}
