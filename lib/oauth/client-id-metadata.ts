import { isKeyplaneError } from '../errors/keyplane-error.js';
import { validateClientMetadata, type ClientMetadata } from './client-metadata.js';
import { oauthError } from './errors.js';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
 * `client_id` is an https URL publishes its metadata at that URL. These are the pure pieces: which
 * ids are such URLs, how a fetched document becomes client metadata, and how long it may be kept.
 * Every refusal is `invalid_client` whose message starts with `client metadata document refused
 * (<problem>)`, the problem one of {@link DocumentProblem} (docs/errors.md).
 */

export type DocumentProblem =
  | 'not_https'
  | 'no_path'
  | 'bad_url'
  | 'fetch_refused'
  | 'fetch_failed'
  | 'too_large'
  | 'not_json'
  | 'client_id_mismatch'
  | 'no_redirect_uris'
  | 'bad_metadata';

/** A fetched document larger than this is refused (the draft suggests 5 KB; MCP clients' are far smaller). */
export const DOCUMENT_MAX_BYTES = 5120;
/** The whole fetch (DNS, connection, body) must finish within this. */
export const DOCUMENT_TIMEOUT_MS = 3000;

/** How long a fetched document is kept: its HTTP caching headers, within these bounds (seconds). */
export const DOCUMENT_CACHE_BOUNDS = {
  /** Even `no-store` or `max-age=0` keeps it this long, so a client cannot make every request a fetch. */
  min: 60,
  /** A longer `max-age` is cut to this, so a changed document is read again within a day. */
  max: 86_400,
  /** Without `Cache-Control: max-age` or `Expires`. */
  default: 300,
} as const;

const MAX_URL_LENGTH = 2000;

/** The refusal of a document or its URL: `invalid_client` naming the problem. */
export function documentRefusal(problem: DocumentProblem, detail: string) {
  return oauthError('invalid_client', `client metadata document refused (${problem}): ${detail}`);
}

/**
 * Whether `clientId` is meant as a Client ID Metadata Document URL: it starts with a URL
 * scheme of http or https. Keyplane's own client ids never do. Such an id is then checked by
 * {@link checkClientIdUrl}: an http one is refused, not looked up as a registered client.
 */
export function isClientIdUrl(clientId: string): boolean {
  return /^https?:\/\//i.test(clientId);
}

/**
 * Draft §3: an https URL with a path, no fragment, no user name or password, no dot segments.
 * Returns the problem, or null when the URL may be fetched.
 */
export function checkClientIdUrl(clientId: string): { problem: DocumentProblem; detail: string } | null {
  if (clientId.length > MAX_URL_LENGTH)
    return { problem: 'bad_url', detail: `the client_id URL is longer than ${MAX_URL_LENGTH} characters` };
  if (!/^https:\/\//.test(clientId)) return { problem: 'not_https', detail: 'the client_id URL must use https' };
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return { problem: 'bad_url', detail: 'the client_id is not a URL' };
  }
  if (url.username !== '' || url.password !== '' || /^https:\/\/[^/?#]*@/.test(clientId))
    return { problem: 'bad_url', detail: 'the client_id URL must not carry a user name or password' };
  if (clientId.includes('#')) return { problem: 'bad_url', detail: 'the client_id URL must not carry a fragment' };
  if (/[\s\u0000-\u001f\u007f]/.test(clientId))
    return { problem: 'bad_url', detail: 'the client_id URL must not contain whitespace' };
  const path = /^https:\/\/[^/?#]*(\/[^?#]*)?/.exec(clientId)?.[1] ?? '';
  if (path === '' || path === '/') return { problem: 'no_path', detail: 'the client_id URL must have a path' };
  // The URL must be the string that identifies the client: no dot segments the parser would remove.
  if (path.split('/').some((segment) => segment === '.' || segment === '..'))
    return { problem: 'bad_url', detail: 'the client_id URL must not contain . or .. segments' };
  return null;
}

/** The document's standard members that a client may set for itself; Keyplane's own members never come from it. */
const DOCUMENT_MEMBERS = [
  'client_name',
  'client_uri',
  'logo_uri',
  'policy_uri',
  'tos_uri',
  'redirect_uris',
  'post_logout_redirect_uris',
  'grant_types',
  'response_types',
  'token_endpoint_auth_method',
  'jwks_uri',
  'scope',
  'application_type',
] as const;

const DOCUMENT_GRANTS = ['authorization_code', 'refresh_token'];

/**
 * Reads a fetched document as the metadata of the client `clientId` (draft §4): a JSON object
 * whose `client_id` is exactly the URL it was fetched from, with `redirect_uris`; the client
 * authenticates with `none` or with `private_key_jwt` and a `jwks_uri`, never a shared secret;
 * grant types are `authorization_code` and `refresh_token`. Members outside the standard ones
 * (first-party, gateway policy, resources, access rules…) are ignored. Throws the refusal.
 */
export function readClientIdMetadataDocument(
  clientId: string,
  body: string,
  options: { defaultScopes?: readonly string[] } = {},
): ClientMetadata {
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch {
    throw documentRefusal('not_json', 'the document is not JSON');
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    throw documentRefusal('not_json', 'the document is not a JSON object');
  const raw = document as Record<string, unknown>;
  if (raw.client_id !== clientId)
    throw documentRefusal('client_id_mismatch', 'the document names another client_id than the URL it was read from');
  if (!Array.isArray(raw.redirect_uris) || raw.redirect_uris.length === 0)
    throw documentRefusal('no_redirect_uris', 'the document lists no redirect_uris');
  // Draft §4.1: a shared secret cannot be published.
  for (const member of ['client_secret', 'client_secret_expires_at'])
    if (raw[member] !== undefined) throw documentRefusal('bad_metadata', `the document must not contain ${member}`);
  const method = raw.token_endpoint_auth_method ?? 'none';
  if (method !== 'none' && method !== 'private_key_jwt')
    throw documentRefusal('bad_metadata', 'token_endpoint_auth_method must be none or private_key_jwt');
  if (method === 'private_key_jwt' && typeof raw.jwks_uri !== 'string')
    throw documentRefusal('bad_metadata', 'private_key_jwt needs a jwks_uri');
  const grants = raw.grant_types ?? ['authorization_code'];
  if (!Array.isArray(grants) || grants.some((grant) => !DOCUMENT_GRANTS.includes(grant as string)))
    throw documentRefusal('bad_metadata', `grant_types may hold ${DOCUMENT_GRANTS.join(' and ')} only`);
  if (!grants.includes('authorization_code'))
    throw documentRefusal('bad_metadata', 'grant_types must include authorization_code');

  const picked: Record<string, unknown> = {};
  for (const member of DOCUMENT_MEMBERS) if (raw[member] !== undefined) picked[member] = raw[member];
  picked.token_endpoint_auth_method = method;
  picked.grant_types = grants;
  if (raw.application_type === 'native') {
    // RFC 8252 §7.1: a native client may name its private-use scheme; checked by the registration rules.
    picked.application_type = 'native';
  }
  try {
    return validateClientMetadata(picked, options.defaultScopes ? { defaultScopes: options.defaultScopes } : {});
  } catch (error) {
    if (isKeyplaneError(error)) {
      const detail =
        typeof error.fields.error_description === 'string' ? error.fields.error_description : error.message;
      throw documentRefusal(error.reason === 'invalid_redirect_uri' ? 'no_redirect_uris' : 'bad_metadata', detail);
    }
    throw error;
  }
}

/**
 * How long a document fetched at `now` may be kept (ms): `Cache-Control: max-age` (or, without
 * it, `Expires` against `Date`), cut into {@link DOCUMENT_CACHE_BOUNDS}; `no-store`, `no-cache`
 * and `max-age=0` keep it for the minimum.
 */
export function documentLifetime(headers: Record<string, string | string[] | undefined>): number {
  const { min, max } = DOCUMENT_CACHE_BOUNDS;
  const header = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const clamp = (seconds: number) => Math.min(max, Math.max(min, seconds)) * 1000;
  const control = (header('cache-control') ?? '').toLowerCase();
  const directives = control.split(',').map((part) => part.trim());
  if (directives.some((d) => d === 'no-store' || d === 'no-cache')) return min * 1000;
  const maxAge = directives.map((d) => /^max-age\s*=\s*"?(\d+)"?$/.exec(d)).find((m) => m !== null);
  if (maxAge) return clamp(Number(maxAge[1]));
  const expires = header('expires');
  if (expires !== undefined) {
    const until = Date.parse(expires);
    const date = Date.parse(header('date') ?? '');
    if (Number.isNaN(until)) return min * 1000; // RFC 9111 §5.3: an invalid Expires is in the past
    if (!Number.isNaN(date)) return clamp(Math.floor((until - date) / 1000));
  }
  return clamp(DOCUMENT_CACHE_BOUNDS.default);
}
