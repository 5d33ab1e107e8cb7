import type { JWK } from 'jose';
import { checkAllowRules, type OrgRule } from '../access/evaluate-access.js';
import { parseGatewayPolicy } from '../gateway-protocol/parse-policy.js';
import type { GatewayPolicy } from '../gateway-protocol/policy.js';
import { oauthError } from './errors.js';
import { validateRedirectUriForRegistration } from './redirect-uri.js';
import { validateResourceForRegistration } from './resource.js';
import { readOidcClientMembers, type OidcClientMembers } from './oidc-client-metadata.js';
import { GRANT_DECLARATIONS, GRANT_TYPES, STANDALONE_GRANT_TYPES, isGrantType, type GrantType } from './grant-types.js';
import { FAPI_PROFILES, applyFapiProfile, type FapiProfile } from './fapi.js';
import { REGISTERED_BY_NAME_SCOPES, SUPPORTED_SCOPES, parseScope } from './scope.js';

/**
 * Client metadata as Keyplane registers it (RFC 7591 §2 plus Keyplane's `resources`,
 * `access` and `gateway`). `validateClientMetadata` turns a request body into this, applying
 * defaults, or throws `invalid_redirect_uri` / `invalid_client_metadata` with RFC 7591 fields.
 */

export const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;
export type ClientAuthMethod = (typeof AUTH_METHODS)[number];
export type ClientGrantType = GrantType;
export type ClientType = 'public' | 'confidential';

/**
 * The `gateway` member's type is the gateway's own (lib/gateway-protocol/policy.ts). Registration checks it
 * more strictly than the gateway does (no repeated paths, nothing under /_gate/, canary needs a
 * percentage, public routes demand nothing): the gateway only needs a document it can enforce,
 * signed by the control plane, and never refuses what registration accepted.
 */
export type { GatewayPolicy } from '../gateway-protocol/policy.js';

export interface ClientMetadata extends OidcClientMembers {
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  policy_uri?: string;
  tos_uri?: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: ClientGrantType[];
  response_types: ['code'];
  scope: string;
  resources: string[];
  /** Who may use the client; `orgs`: only members of these orgs (in these roles) may sign in to it. */
  access: { humans: boolean; agents: boolean; orgs?: OrgRule[] };
  token_endpoint_auth_method: ClientAuthMethod;
  jwks?: { keys: JWK[] };
  jwks_uri?: string;
  /** RFC 9449 §5.2: when true, the client always asks for DPoP-bound tokens. */
  dpop_bound_access_tokens: boolean;
  gateway?: GatewayPolicy;
  /** In-place sign-in (popup, FedCM, direct grant) from the origins of `redirect_uris` (docs/in-place.md). */
  in_place: boolean;
  /**
   * The operator's own app: no approval page (as Hydra's `skip_consent`). Present only when true;
   * only the admin token may set it (the registration route checks who registers).
   */
  first_party?: true;
  /** Turns on the deprecated v1 script bridge for this client (its redirect URIs are its v1 return URLs). */
  v1_bridge?: true;
  /** The FAPI 2.0 Security Profile for this client (lib/oauth/fapi.ts, docs/oidc.md §7.7). */
  fapi_profile?: FapiProfile;
}

/** Defaults applied to omitted fields (documented in docs/oidc.md). */
export const CLIENT_DEFAULTS = {
  token_endpoint_auth_method: 'client_secret_basic',
  grant_types: ['authorization_code'],
  response_types: ['code'],
  /**
   * The standard scopes the provider offers: OIDC Dynamic Registration has no `scope` member, so
   * a relying party that registers dynamically must still be able to ask for `email` and
   * `profile`. `offline_access` is kept only with the refresh_token grant. `orgs` and `groups` release
   * the account's memberships and teams and are registered only when asked for (docs/orgs.md#groups-for-relying-parties).
   */
  scope: SUPPORTED_SCOPES.filter((scope) => !REGISTERED_BY_NAME_SCOPES.includes(scope)).join(' '),
  resources: [],
  post_logout_redirect_uris: [],
  access: { humans: true, agents: false },
  dpop_bound_access_tokens: false,
  in_place: false,
} as const;

const LIMITS = {
  redirectUris: 20,
  resources: 20,
  jwksKeys: 10,
  text: 200,
  allowEntries: 500,
};
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

function bad(message: string): never {
  throw oauthError('invalid_client_metadata', message);
}

function badRedirect(message: string): never {
  throw oauthError('invalid_redirect_uri', message);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringArray(value: unknown, field: string, max: number): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) bad(`${field} must be an array of strings`);
  if (value.length > max) bad(`${field} has more than ${max} entries`);
  return [...new Set(value as string[])];
}

function optionalText(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > LIMITS.text)
    bad(`${field} must be a string of 1 to ${LIMITS.text} characters`);
  return value;
}

function optionalHttpsUri(body: Record<string, unknown>, field: string, loopbackHttp = true): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.length > 2000) bad(`${field} must be a URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    bad(`${field} must be an absolute URL`);
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback && loopbackHttp))
    bad(`${field} must use https`);
  return value;
}

function redirectList(value: unknown, field: string, required: boolean, native = false): string[] {
  if (value === undefined || value === null) {
    if (required) badRedirect(`${field} is required: register at least one exact callback URL`);
    return [];
  }
  if (!Array.isArray(value)) badRedirect(`${field} must be an array of URLs`);
  if (value.length > LIMITS.redirectUris) badRedirect(`${field} has more than ${LIMITS.redirectUris} entries`);
  if (required && value.length === 0) badRedirect(`${field} must list at least one exact callback URL`);
  for (const uri of value) {
    const problem = validateRedirectUriForRegistration(uri, { native });
    if (problem)
      badRedirect(`${field}: ${typeof uri === 'string' ? uri.slice(0, 100) : 'an entry'} ${problem.message}`);
  }
  return [...new Set(value as string[])];
}

function validateJwks(value: unknown): { keys: JWK[] } {
  if (!isObject(value) || !Array.isArray(value.keys) || value.keys.length === 0)
    bad('jwks must be {"keys": [...]} with at least one key');
  if (value.keys.length > LIMITS.jwksKeys) bad(`jwks has more than ${LIMITS.jwksKeys} keys`);
  for (const key of value.keys) {
    if (!isObject(key) || !['EC', 'RSA', 'OKP'].includes(key.kty as string))
      bad('jwks keys must be EC, RSA or OKP public keys');
    if (PRIVATE_JWK_MEMBERS.some((member) => member in key)) bad('jwks must not contain private key material');
  }
  return { keys: value.keys as JWK[] };
}

/** `access.orgs` (docs/orgs.md#who-may-sign-in-to-an-app): only members of these orgs, in these roles, may sign in. */
function validateAccessOrgs(value: unknown): OrgRule[] {
  if (!Array.isArray(value) || value.length === 0)
    bad('access.orgs must be a non-empty list of {slug, roles?, teams?}');
  if (value.length > LIMITS.allowEntries) bad(`access.orgs has more than ${LIMITS.allowEntries} entries`);
  const problems = checkAllowRules({ orgs: value }, 'access');
  if (problems.length > 0) bad(problems.join('; '));
  return (value as OrgRule[]).map(({ slug, roles, teams }) => ({
    slug: slug.toLowerCase(),
    ...(roles ? { roles } : {}),
    ...(teams ? { teams: teams.map((team) => team.toLowerCase()) } : {}),
  }));
}

function validateGateway(value: unknown, scopeTokens: (v: unknown) => string[]): GatewayPolicy {
  // docs/gateway.md#policy; every problem named at once, like the rest of the metadata.
  const parsed = parseGatewayPolicy(value, { at: 'registration', scopeTokens });
  if (!parsed.policy) bad(parsed.problems.join('; '));
  return parsed.policy;
}

export interface MetadataOptions {
  /** The scopes a registration without `scope` gets (the operator's `oidc.defaultClientScopes`); all offered ones by default. */
  defaultScopes?: readonly string[];
}

/** The scope of a registration that sent none: the defaults, `offline_access` only with the refresh grant. */
function defaultScope(defaults: readonly string[], grantTypes: readonly string[]): string {
  const scopes = defaults.filter((scope) => scope !== 'offline_access' || grantTypes.includes('refresh_token'));
  return (scopes.includes('openid') ? scopes : ['openid', ...scopes]).join(' ');
}

/**
 * Validates and normalizes registration metadata. A member this server understands is honoured
 * or refused (RFC 7591 §3.2.2, lib/oauth/oidc-client-metadata.ts); members it does not know are
 * ignored and not echoed (RFC 7591 §2); omitted ones take the defaults, which is also how an
 * RFC 7592 update treats them.
 */
export function validateClientMetadata(body: unknown, options: MetadataOptions = {}): ClientMetadata {
  if (!isObject(body)) bad('the registration request must be a JSON object');

  const method = body.token_endpoint_auth_method ?? CLIENT_DEFAULTS.token_endpoint_auth_method;
  if (!(AUTH_METHODS as readonly unknown[]).includes(method))
    bad(`token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`);

  const responseTypes =
    body.response_types === undefined ? ['code'] : stringArray(body.response_types, 'response_types', 5);
  if (responseTypes.length !== 1 || responseTypes[0] !== 'code')
    bad('response_types must be ["code"]: only the authorization code flow is offered');

  const grantTypes =
    body.grant_types === undefined
      ? [...CLIENT_DEFAULTS.grant_types]
      : stringArray(body.grant_types, 'grant_types', GRANT_TYPES.length);
  const unknownGrant = grantTypes.find((g) => !isGrantType(g));
  if (unknownGrant !== undefined)
    bad(`grant_types may hold ${GRANT_TYPES.join(', ')} only, not ${unknownGrant.slice(0, 60)}`);
  // A CLI or a TV may sign people in through the device grant alone, and a service acting for
  // people may only exchange their tokens: neither needs a redirect URI.
  const withCode = grantTypes.includes('authorization_code');
  if (!grantTypes.some((g) => (STANDALONE_GRANT_TYPES as string[]).includes(g)))
    bad(`grant_types must include one of ${STANDALONE_GRANT_TYPES.join(', ')}`);
  if (grantTypes.includes('client_credentials') && method === 'none')
    bad(
      'grant_types client_credentials is for confidential clients: register a token_endpoint_auth_method other than none',
    );

  let scopes: string[];
  try {
    scopes = parseScope(
      body.scope ?? defaultScope(options.defaultScopes ?? CLIENT_DEFAULTS.scope.split(' '), grantTypes as string[]),
    );
  } catch {
    bad('scope must be space-separated scope tokens');
  }
  if (scopes.length === 0) bad('scope must not be empty');
  if (scopes.includes('offline_access') && !grantTypes.includes('refresh_token'))
    bad('scope offline_access needs the refresh_token grant registered');

  const resources = body.resources === undefined ? [] : stringArray(body.resources, 'resources', LIMITS.resources);
  for (const resource of resources) {
    const problem = validateResourceForRegistration(resource);
    if (problem) bad(`resources: ${resource.slice(0, 100)} ${problem}`);
  }

  let access: ClientMetadata['access'] = { ...CLIENT_DEFAULTS.access };
  if (body.access !== undefined) {
    const a = body.access;
    if (!isObject(a)) bad('access must be {"humans": boolean, "agents": boolean, "orgs"?: [{slug, roles?, teams?}]}');
    const humans = a.humans ?? CLIENT_DEFAULTS.access.humans;
    const agents = a.agents ?? CLIENT_DEFAULTS.access.agents;
    if (typeof humans !== 'boolean' || typeof agents !== 'boolean')
      bad('access must be {"humans": boolean, "agents": boolean, "orgs"?: [{slug, roles?, teams?}]}');
    if (!humans && !agents) bad('access must allow humans, agents or both');
    access = { humans, agents };
    if (a.orgs !== undefined) access.orgs = validateAccessOrgs(a.orgs);
  }
  const agentGrant = grantTypes.find((g) => isGrantType(g) && GRANT_DECLARATIONS[g].admittedBy === 'access.agents');
  if (agentGrant !== undefined && !access.agents)
    bad(`grant_types ${agentGrant} admits agents: register it with "access": {"humans": …, "agents": true}`);

  const dpop = body.dpop_bound_access_tokens ?? false;
  if (typeof dpop !== 'boolean') bad('dpop_bound_access_tokens must be a boolean');

  const inPlace = body.in_place ?? false;
  if (typeof inPlace !== 'boolean') bad('in_place must be a boolean');

  const oidcMembers = readOidcClientMembers(body);
  const native = oidcMembers.application_type === 'native';
  const metadata: ClientMetadata = {
    ...oidcMembers,
    // RFC 8252 §7.1: only a native client may name a private-use scheme.
    redirect_uris: redirectList(body.redirect_uris, 'redirect_uris', withCode, native),
    post_logout_redirect_uris: redirectList(body.post_logout_redirect_uris, 'post_logout_redirect_uris', false, native),
    grant_types: grantTypes as ClientGrantType[],
    response_types: ['code'],
    scope: scopes.join(' '),
    resources,
    access,
    token_endpoint_auth_method: method as ClientAuthMethod,
    dpop_bound_access_tokens: dpop,
    in_place: inPlace,
  };
  for (const field of ['client_name'] as const) {
    const value = optionalText(body, field);
    if (value !== undefined) metadata[field] = value;
  }
  for (const field of ['client_uri', 'logo_uri', 'policy_uri', 'tos_uri'] as const) {
    const value = optionalHttpsUri(body, field);
    if (value !== undefined) metadata[field] = value;
  }

  const hasJwks = body.jwks !== undefined && body.jwks !== null;
  const hasJwksUri = body.jwks_uri !== undefined && body.jwks_uri !== null;
  if (hasJwks && hasJwksUri) bad('send jwks or jwks_uri, not both (RFC 7591 §2)');
  // The client's keys verify its client assertions (private_key_jwt) and its request objects (RFC 9101).
  if (method === 'private_key_jwt' && !hasJwks && !hasJwksUri) bad('private_key_jwt needs jwks or jwks_uri');
  if (!hasJwks && !hasJwksUri) {
    const needsKeys = (['request_object_signing_alg', 'request_uris', 'require_signed_request_object'] as const).find(
      (member) => oidcMembers[member] !== undefined && oidcMembers[member] !== false,
    );
    if (needsKeys) bad(`${needsKeys} needs jwks or jwks_uri to verify the request objects`);
  }
  if (hasJwks) metadata.jwks = validateJwks(body.jwks);
  if (hasJwksUri) {
    // The server fetches this one itself, so plain http is never accepted (docs/fetch.md).
    const uri = optionalHttpsUri(body, 'jwks_uri', false);
    if (uri !== undefined) metadata.jwks_uri = uri;
  }

  if (body.first_party !== undefined && body.first_party !== null && body.first_party !== false) {
    if (body.first_party !== true) bad('first_party must be a boolean');
    metadata.first_party = true;
  }

  if (body.v1_bridge !== undefined && body.v1_bridge !== false) {
    if (body.v1_bridge !== true) bad('v1_bridge must be a boolean');
    metadata.v1_bridge = true;
  }

  if (body.gateway !== undefined && body.gateway !== null) {
    metadata.gateway = validateGateway(body.gateway, (value) => {
      try {
        return parseScope(value);
      } catch {
        bad('gateway route scopes must be scope tokens');
      }
    });
  }
  if (body.fapi_profile !== undefined && body.fapi_profile !== null) {
    if (!(FAPI_PROFILES as readonly unknown[]).includes(body.fapi_profile))
      bad(`fapi_profile must be one of ${FAPI_PROFILES.join(', ')}`);
    return { ...applyFapiProfile(metadata), fapi_profile: body.fapi_profile as FapiProfile };
  }
  return metadata;
}

/** Public for `none`, confidential for every other method (RFC 6749 §2.1). */
export function clientTypeOf(method: ClientAuthMethod): ClientType {
  return method === 'none' ? 'public' : 'confidential';
}

/** Whether the method authenticates with a shared secret we issue. */
export function usesClientSecret(method: ClientAuthMethod): boolean {
  return method === 'client_secret_basic' || method === 'client_secret_post';
}
