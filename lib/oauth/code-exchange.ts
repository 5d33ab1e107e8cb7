import { checkPkce } from '../pkce/check-pkce.js';
import { oauthError } from './errors.js';

/**
 * The checks of an authorization-code exchange (RFC 6749 §4.1.3, RFC 7636 §4.6, RFC 9449 §10),
 * after the code was consumed: it is unexpired, issued to this client for this redirect URI,
 * the verifier matches the challenge, a `dpop_jkt` binding is met, and the sign-in that issued
 * it is still live (a code redeemed after sign-out is refused). Throws the RFC error; pure.
 */
export interface IssuedCodeFacts {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  dpopJkt: string | null;
  expiresAt: number;
}

export function checkCodeExchange(
  code: IssuedCodeFacts,
  request: {
    clientId: string;
    redirectUri: string;
    verifier: string;
    /** Thumbprint of the request's DPoP proof key, or null without a proof. */
    proofJkt: string | null;
    now: number;
    /** Whether the session the code was issued to is still live. */
    sessionLive: boolean;
  },
): void {
  if (code.expiresAt <= request.now) throw oauthError('invalid_grant', 'the authorization code has expired');
  if (code.clientId !== request.clientId)
    throw oauthError('invalid_grant', 'the authorization code was issued to another client');
  if (code.redirectUri !== request.redirectUri)
    throw oauthError('invalid_grant', 'redirect_uri differs from the authorization request');
  const pkce = checkPkce({ challenge: code.codeChallenge, method: 'S256', verifier: request.verifier });
  if (!pkce.ok)
    throw oauthError(
      'invalid_grant',
      pkce.failure === 'invalid_verifier'
        ? 'code_verifier is malformed'
        : 'code_verifier does not match the code_challenge',
    );
  if (code.dpopJkt !== null && request.proofJkt !== code.dpopJkt) {
    throw oauthError('invalid_dpop_proof', 'the DPoP key differs from the dpop_jkt of the authorization request', {
      status: 400,
    });
  }
  if (!request.sessionLive) throw oauthError('invalid_grant', 'the sign-in that issued this code has ended');
}
