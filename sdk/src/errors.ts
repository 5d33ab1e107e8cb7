/**
 * Every failure the SDK raises. `code` is the OAuth `error` when the server sent one
 * (`invalid_grant`, `access_denied`, `use_dpop_nonce`, …) or one of the SDK's own codes below;
 * branch on `code`, never on the message.
 */
export type SdkErrorCode =
  | 'state_mismatch'
  | 'issuer_mismatch'
  | 'missing_code'
  | 'invalid_id_token'
  | 'insufficient_assurance'
  | 'discovery_failed'
  | 'token_endpoint_failed'
  | 'session_missing'
  | (string & {});

export class KeyplaneSdkError extends Error {
  override readonly name = 'KeyplaneSdkError';
  constructor(
    readonly code: SdkErrorCode,
    message: string,
    /** HTTP status of the server answer this error came from, when there was one. */
    readonly status?: number,
  ) {
    super(message);
  }
}

export function isKeyplaneSdkError(error: unknown): error is KeyplaneSdkError {
  return error instanceof KeyplaneSdkError;
}
