import { isProtocolError, ProtocolError, type DpopErrorCode } from '../errors/protocol-error.js';

/**
 * Which RFC 9449 §4.3 check refused a proof. The `code` is what goes on the wire; `check` is
 * for logs, metrics and tests.
 */
export type DpopCheck =
  | 'header' // 1. exactly one DPoP header
  | 'jwt' // 2. a single well-formed JWT
  | 'claims' // 3. required claims present and typed
  | 'typ' // 4. typ dpop+jwt
  | 'alg' // 5. asymmetric, allowed algorithm
  | 'signature' // 6. signed by the key in jwk
  | 'jwk' // 7. a public key only
  | 'htm' // 8. method
  | 'htu' // 9. target URI
  | 'nonce' // 10. server nonce
  | 'iat' // 11. creation time inside the window
  | 'ath' // 12. access-token hash
  | 'binding' // 12. proof key = the key the token is bound to
  | 'replay'; // §11.1 jti seen before

export type { DpopErrorCode };

/** A refused DPoP proof. Callers answer `code` (400 at a token endpoint, 401 at a resource). */
export class DpopError extends ProtocolError<DpopErrorCode> {
  constructor(
    code: DpopErrorCode,
    readonly check: DpopCheck,
    message: string,
  ) {
    super(code, message);
  }
}

/** A refused DPoP proof, told apart by its code. */
export function isDpopError(error: unknown): error is DpopError {
  return isProtocolError(error, 'invalid_dpop_proof', 'use_dpop_nonce');
}
