import { isAssuranceLevel } from '../assurance/assurance.js';
import { oauthError } from './errors.js';
import { validateRedirectUriForRegistration } from './redirect-uri.js';

/**
 * The OpenID Connect Dynamic Client Registration 1.0 §2 members (and the RFC 7591, RFC 9101 and
 * Back-Channel Logout members beside them) as Keyplane registers them. RFC 7591 §3.2.2: a member
 * the server understands is either honoured or refused with `invalid_client_metadata` naming it;
 * a value is never stored and then ignored. docs/oidc.md "Every registration member" lists each
 * member and what happens to it.
 */

/** Algorithms Keyplane verifies on what a client signs (client assertions, request objects). */
export const CLIENT_SIGNING_ALGS = ['ES256', 'EdDSA', 'PS256', 'RS256'] as const;
export type ClientSigningAlg = (typeof CLIENT_SIGNING_ALGS)[number];

/** What Keyplane itself signs with (ID tokens, userinfo, logout tokens): ES256 only. */
export const SERVER_SIGNING_ALGS = ['ES256'] as const;

export interface OidcClientMembers {
  /** OIDC Registration §2: `web` (default) or `native`; the redirect URI rules of §2 hold for both. */
  application_type?: 'web' | 'native';
  contacts?: string[];
  /** Only `public` subject identifiers exist (the account's stable `usr_…` id). */
  subject_type?: 'public';
  id_token_signed_response_alg?: 'ES256';
  /** When set, userinfo answers a signed JWT (`application/jwt`) instead of JSON (OIDC Core §5.3.2). */
  userinfo_signed_response_alg?: 'ES256';
  /** Request objects (RFC 9101) must be signed with exactly this algorithm. */
  request_object_signing_alg?: ClientSigningAlg;
  /** `private_key_jwt` client assertions must be signed with exactly this algorithm. */
  token_endpoint_auth_signing_alg?: ClientSigningAlg;
  /** Seconds: the `max_age` of a request that sends none (OIDC Registration §2). */
  default_max_age?: number;
  /** Always honoured: every ID token carries `auth_time`. */
  require_auth_time?: boolean;
  /** Assurance levels used as `acr_values` when a request sends none. */
  default_acr_values?: string[];
  /** The only `request_uri` values this client may use (OIDC Core §6.2; discovery says registration is required). */
  request_uris?: string[];
  /** RFC 9101 §10.5: every authorization request of this client must be a signed request object. */
  require_signed_request_object?: boolean;
  /** RFC 9126 §6: every authorization request of this client must be pushed to `/auth/par` first. */
  require_pushed_authorization_requests?: boolean;
  /** OIDC Back-Channel Logout 1.0 §2.2: where logout tokens are POSTed when a session with this client ends. */
  backchannel_logout_uri?: string;
  /** Always honoured: every logout token carries `sid`. */
  backchannel_logout_session_required?: boolean;
  /**
   * OIDC Front-Channel Logout 1.0 §2: rendered in an iframe of the page that ends a session this
   * client got tokens in; same scheme, host and port as one of the client's `redirect_uris`.
   */
  frontchannel_logout_uri?: string;
  /** Always honoured: the iframe's URL always carries `iss` and `sid`. */
  frontchannel_logout_session_required?: boolean;
  software_id?: string;
  software_version?: string;
}

/**
 * Standard members Keyplane understands and does not offer: any value but the harmless one
 * (`false`, or nothing) is refused, with the reason it is not offered.
 */
export const REFUSED_MEMBERS: Readonly<Record<string, string>> = {
  id_token_encrypted_response_alg: 'encrypted ID tokens are not offered',
  id_token_encrypted_response_enc: 'encrypted ID tokens are not offered',
  userinfo_encrypted_response_alg: 'encrypted userinfo responses are not offered',
  userinfo_encrypted_response_enc: 'encrypted userinfo responses are not offered',
  request_object_encryption_alg: 'encrypted request objects are not offered',
  request_object_encryption_enc: 'encrypted request objects are not offered',
  authorization_signed_response_alg: 'JWT-secured authorization responses (JARM) are not offered',
  authorization_encrypted_response_alg: 'JWT-secured authorization responses (JARM) are not offered',
  authorization_encrypted_response_enc: 'JWT-secured authorization responses (JARM) are not offered',
  introspection_signed_response_alg: 'JWT introspection responses (RFC 9701) are not offered',
  introspection_encrypted_response_alg: 'JWT introspection responses (RFC 9701) are not offered',
  introspection_encrypted_response_enc: 'JWT introspection responses (RFC 9701) are not offered',
  sector_identifier_uri: 'pairwise subject identifiers are not offered (subject_type public only)',
  initiate_login_uri: 'third-party-initiated login is not offered',
  software_statement: 'software statements are not verified here; register the metadata itself',
  tls_client_auth_subject_dn: 'mutual-TLS client authentication (RFC 8705) is not offered',
  tls_client_auth_san_dns: 'mutual-TLS client authentication (RFC 8705) is not offered',
  tls_client_auth_san_uri: 'mutual-TLS client authentication (RFC 8705) is not offered',
  tls_client_auth_san_ip: 'mutual-TLS client authentication (RFC 8705) is not offered',
  tls_client_auth_san_email: 'mutual-TLS client authentication (RFC 8705) is not offered',
  tls_client_certificate_bound_access_tokens:
    'certificate-bound access tokens (RFC 8705) are not offered; use dpop_bound_access_tokens',
  authorization_details_types: 'rich authorization requests (RFC 9396) are not offered',
};

const LIMITS = { contacts: 10, text: 200, requestUris: 20, uri: 2000 };

function bad(message: string): never {
  throw oauthError('invalid_client_metadata', message);
}

function absent(value: unknown): boolean {
  return value === undefined || value === null;
}

function oneOf<T extends string>(body: Record<string, unknown>, field: string, allowed: readonly T[]): T | undefined {
  const value = body[field];
  if (absent(value)) return undefined;
  if (!(allowed as readonly unknown[]).includes(value))
    bad(
      `${field} ${typeof value === 'string' ? `${value.slice(0, 40)} ` : ''}is not offered: use ${allowed.join(', ')}`,
    );
  return value as T;
}

function flag(body: Record<string, unknown>, field: string): boolean | undefined {
  const value = body[field];
  if (absent(value)) return undefined;
  if (typeof value !== 'boolean') bad(`${field} must be a boolean`);
  return value;
}

function text(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (absent(value)) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > LIMITS.text)
    bad(`${field} must be a string of 1 to ${LIMITS.text} characters`);
  return value;
}

/** An absolute https URL without a fragment or credentials: the server sends requests there itself. */
function serverFetchedUri(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length > LIMITS.uri) bad(`${field} must be a URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    bad(`${field} must be an absolute URL`);
  }
  if (url.protocol !== 'https:') bad(`${field} must use https (the server fetches it)`);
  if (url.username !== '' || url.password !== '') bad(`${field} must not carry a user name or password`);
  return value;
}

/**
 * Front-Channel Logout 1.0 §2: the browser loads this URL, so it follows the redirect URI rules
 * (https, http only on loopback, no fragment), and its scheme, host and port must be those of one
 * of the client's `redirect_uris`, so a client cannot make the logout page load a third party.
 */
function frontchannelLogoutUri(body: Record<string, unknown>): string | undefined {
  const value = body.frontchannel_logout_uri;
  if (absent(value)) return undefined;
  const problem = validateRedirectUriForRegistration(value);
  if (problem) bad(`frontchannel_logout_uri ${problem.message}`);
  const origin = new URL(value as string).origin;
  const redirects = Array.isArray(body.redirect_uris) ? body.redirect_uris : [];
  if (!redirects.some((uri) => typeof uri === 'string' && URL.canParse(uri) && new URL(uri).origin === origin))
    bad('frontchannel_logout_uri must have the scheme, host and port of one of the redirect_uris');
  return value as string;
}

/**
 * Reads the members above from a registration body: each value honoured (and returned) or
 * refused. Refused members come first, so a client learns at once what is not offered.
 */
export function readOidcClientMembers(body: Record<string, unknown>): OidcClientMembers {
  for (const [member, why] of Object.entries(REFUSED_MEMBERS)) {
    const value = body[member];
    if (!absent(value) && value !== false) bad(`${member}: ${why}`);
  }
  const out: OidcClientMembers = {};
  const applicationType = oneOf(body, 'application_type', ['web', 'native'] as const);
  if (applicationType) out.application_type = applicationType;

  if (!absent(body.contacts)) {
    const contacts = body.contacts;
    if (
      !Array.isArray(contacts) ||
      contacts.length > LIMITS.contacts ||
      contacts.some((c) => typeof c !== 'string' || c.length === 0 || c.length > LIMITS.text || /[\s<>]/.test(c))
    )
      bad(`contacts must be an array of at most ${LIMITS.contacts} e-mail addresses`);
    out.contacts = [...new Set(contacts as string[])];
  }

  const subjectType = oneOf(body, 'subject_type', ['public'] as const);
  if (subjectType) out.subject_type = subjectType;
  const idTokenAlg = oneOf(body, 'id_token_signed_response_alg', SERVER_SIGNING_ALGS);
  if (idTokenAlg) out.id_token_signed_response_alg = idTokenAlg;
  const userinfoAlg = oneOf(body, 'userinfo_signed_response_alg', SERVER_SIGNING_ALGS);
  if (userinfoAlg) out.userinfo_signed_response_alg = userinfoAlg;
  // `none` is never accepted: an unsigned request object or assertion proves nothing.
  const requestAlg = oneOf(body, 'request_object_signing_alg', CLIENT_SIGNING_ALGS);
  if (requestAlg) out.request_object_signing_alg = requestAlg;
  const authAlg = oneOf(body, 'token_endpoint_auth_signing_alg', CLIENT_SIGNING_ALGS);
  if (authAlg) {
    if (body.token_endpoint_auth_method !== 'private_key_jwt')
      bad('token_endpoint_auth_signing_alg is only for private_key_jwt clients');
    out.token_endpoint_auth_signing_alg = authAlg;
  }

  if (!absent(body.default_max_age)) {
    const maxAge = body.default_max_age;
    if (typeof maxAge !== 'number' || !Number.isInteger(maxAge) || maxAge < 0 || maxAge > 999_999_999)
      bad('default_max_age must be a non-negative integer (seconds)');
    out.default_max_age = maxAge;
  }
  const requireAuthTime = flag(body, 'require_auth_time');
  if (requireAuthTime !== undefined) out.require_auth_time = requireAuthTime;
  if (!absent(body.default_acr_values)) {
    const values = body.default_acr_values;
    if (!Array.isArray(values) || values.length === 0 || values.some((v) => !isAssuranceLevel(v)))
      bad('default_acr_values must list assurance levels: recovery, email, passkey, sensitive');
    out.default_acr_values = [...new Set(values as string[])];
  }

  if (!absent(body.request_uris)) {
    const uris = body.request_uris;
    if (!Array.isArray(uris) || uris.length > LIMITS.requestUris)
      bad(`request_uris must be an array of at most ${LIMITS.requestUris} URLs`);
    out.request_uris = [...new Set(uris.map((uri) => serverFetchedUri(uri, 'request_uris')))];
  }
  const requireSigned = flag(body, 'require_signed_request_object');
  if (requireSigned !== undefined) out.require_signed_request_object = requireSigned;
  const requirePushed = flag(body, 'require_pushed_authorization_requests');
  if (requirePushed !== undefined) out.require_pushed_authorization_requests = requirePushed;

  if (!absent(body.backchannel_logout_uri)) {
    const uri = serverFetchedUri(body.backchannel_logout_uri, 'backchannel_logout_uri');
    // Back-Channel Logout 1.0 §2.2: an absolute URI without a fragment.
    if (new URL(uri).hash !== '' || uri.includes('#')) bad('backchannel_logout_uri must not have a fragment');
    out.backchannel_logout_uri = uri;
  }
  const sessionRequired = flag(body, 'backchannel_logout_session_required');
  if (sessionRequired !== undefined) {
    if (out.backchannel_logout_uri === undefined && sessionRequired)
      bad('backchannel_logout_session_required needs backchannel_logout_uri');
    out.backchannel_logout_session_required = sessionRequired;
  }

  const frontchannel = frontchannelLogoutUri(body);
  if (frontchannel !== undefined) out.frontchannel_logout_uri = frontchannel;
  const frontchannelSession = flag(body, 'frontchannel_logout_session_required');
  if (frontchannelSession !== undefined) {
    if (frontchannel === undefined && frontchannelSession)
      bad('frontchannel_logout_session_required needs frontchannel_logout_uri');
    out.frontchannel_logout_session_required = frontchannelSession;
  }

  for (const field of ['software_id', 'software_version'] as const) {
    const value = text(body, field);
    if (value !== undefined) out[field] = value;
  }
  return out;
}
