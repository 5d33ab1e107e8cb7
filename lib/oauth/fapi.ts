import { oauthError } from './errors.js';

/**
 * The FAPI 2.0 Security Profile (final) as a per-client switch: client metadata
 * `fapi_profile: "2.0"`. Registration checks what the client must be, and turns on the switches
 * that make the server enforce the rest for it; docs/oidc.md §7.7 lists every requirement and
 * how it is met. Pure.
 */

export const FAPI_PROFILES = ['2.0'] as const;
export type FapiProfile = (typeof FAPI_PROFILES)[number];
/** FAPI 2.0 §5.4.1: the algorithms a FAPI client may sign its assertions and request objects with. */
export const FAPI_SIGNING_ALGS = ['PS256', 'ES256', 'EdDSA'] as const;
/** FAPI 2.0 §5.3.2.1 item 13: authorization codes live at most 60 seconds. */
export const FAPI_MAX_CODE_SECONDS = 60;

interface FapiRelevantMetadata {
  token_endpoint_auth_method: string;
  redirect_uris: readonly string[];
  token_endpoint_auth_signing_alg?: string;
  request_object_signing_alg?: string;
  require_pushed_authorization_requests?: boolean;
  dpop_bound_access_tokens: boolean;
}

function bad(message: string): never {
  throw oauthError('invalid_client_metadata', `fapi_profile 2.0: ${message}`);
}

/**
 * Checks a registration that asks for the profile and returns the switches it implies: pushed
 * requests required (§5.3.2.2 item 2), DPoP-bound tokens (§5.3.2.1 item 5). Refuses what the
 * profile forbids: a client not authenticated by `private_key_jwt` (§5.3.2.1 item 4, Keyplane
 * offers no mTLS), a redirect URI that is not https (§5.3.2.2 item 9), a signing algorithm
 * outside PS256, ES256, EdDSA (§5.4.1).
 */
export function applyFapiProfile<T extends FapiRelevantMetadata>(metadata: T): T {
  if (metadata.token_endpoint_auth_method !== 'private_key_jwt')
    bad('the client must authenticate with private_key_jwt (confidential clients only)');
  const insecure = metadata.redirect_uris.find((uri) => !uri.startsWith('https://'));
  if (insecure !== undefined) bad(`redirect URIs must use https: ${insecure.slice(0, 100)}`);
  for (const member of ['token_endpoint_auth_signing_alg', 'request_object_signing_alg'] as const) {
    const alg = metadata[member];
    if (alg !== undefined && !(FAPI_SIGNING_ALGS as readonly string[]).includes(alg))
      bad(`${member} must be one of ${FAPI_SIGNING_ALGS.join(', ')}`);
  }
  if (metadata.require_pushed_authorization_requests === false) bad('pushed authorization requests are required');
  return { ...metadata, require_pushed_authorization_requests: true, dpop_bound_access_tokens: true };
}

/**
 * FAPI 2.0 SP §5.3.2: no refresh-token rotation for a FAPI client. Its refresh tokens are
 * sender-constrained instead, bound to the client's own authentication (`private_key_jwt`, which
 * the profile requires), so a leaked one is useless without the client's key (RFC 9449 §5).
 */
export function rotatesRefreshTokens(metadata: { fapi_profile?: FapiProfile }): boolean {
  return metadata.fapi_profile === undefined;
}
