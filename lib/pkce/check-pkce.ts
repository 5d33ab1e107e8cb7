import { constantEquals } from '../crypto/constant-equals.js';
import { sha256 } from '../crypto/sha256.js';

/** RFC 7636 §4.1: 43 to 128 characters of the unreserved set `[A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~"`. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** An S256 challenge is base64url(SHA-256(verifier)) without padding: always 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export type PkceFailure = 'unsupported_method' | 'invalid_challenge' | 'invalid_verifier' | 'mismatch';

export type PkceResult = { ok: true } | { ok: false; failure: PkceFailure };

/** True when `verifier` has the syntax RFC 7636 §4.1 requires. */
export function isValidCodeVerifier(verifier: unknown): verifier is string {
  return typeof verifier === 'string' && VERIFIER.test(verifier);
}

/**
 * True when `challenge` and `method` are acceptable at the authorization endpoint: the method
 * must be `S256` (RFC 9700 §2.1.1: `plain` is refused) and the challenge a 43-character
 * base64url SHA-256 digest.
 */
export function isValidCodeChallenge(challenge: unknown, method: unknown): boolean {
  return method === 'S256' && typeof challenge === 'string' && S256_CHALLENGE.test(challenge);
}

/** base64url(SHA-256(ASCII(verifier))), RFC 7636 §4.2. */
export function computeS256Challenge(verifier: string): string {
  return sha256(verifier).toString('base64url');
}

/**
 * Checks a PKCE code verifier against the challenge stored with the authorization code
 * (RFC 7636 §4.6). Only `S256` is accepted; the comparison is constant-time.
 */
export function checkPkce(input: { challenge: string; method: string; verifier: unknown }): PkceResult {
  if (input.method !== 'S256') return { ok: false, failure: 'unsupported_method' };
  if (!S256_CHALLENGE.test(input.challenge)) return { ok: false, failure: 'invalid_challenge' };
  if (!isValidCodeVerifier(input.verifier)) return { ok: false, failure: 'invalid_verifier' };
  return constantEquals(computeS256Challenge(input.verifier), input.challenge)
    ? { ok: true }
    : { ok: false, failure: 'mismatch' };
}
