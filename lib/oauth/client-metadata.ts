import type { JWK } from 'jose';
import { checkAllowRules, type AllowRules, type OrgRule } from '../access/evaluate-access.js';
import { checkToolRules, type GatewayPolicy, type RoutePolicy, type ToolRule } from '../gateway-protocol/policy.js';
import { oauthError } from './errors.js';
import { validateRedirectUriForRegistration } from './redirect-uri.js';
import { validateResourceForRegistration } from './resource.js';
import { readOidcClientMembers, type OidcClientMembers } from './oidc-client-metadata.js';
import { DEVICE_CODE_GRANT } from './device-code.js';
import { TOKEN_EXCHANGE_GRANT } from './token-exchange.js';
import { FAPI_PROFILES, applyFapiProfile, type FapiProfile } from './fapi.js';
import { SUPPORTED_SCOPES, parseScope } from './scope.js';

/**
 * Client metadata as Keyplane registers it (RFC 7591 §2 plus Keyplane's `resources`,
 * `access` and `gateway`). `validateClientMetadata` turns a request body into this, applying
 * defaults, or throws `invalid_redirect_uri` / `invalid_client_metadata` with RFC 7591 fields.
 */

export const AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;
export type ClientAuthMethod = (typeof AUTH_METHODS)[number];
/**
 * RFC 7523 §2.1 for agents. Agents are admitted by `access.agents`; RFC 7591 clients say the same
 * by listing this grant, so it is accepted only together with `access.agents: true`.
 */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
export const GRANT_TYPES = [
  'authorization_code',
  'refresh_token',
  JWT_BEARER_GRANT,
  DEVICE_CODE_GRANT,
  TOKEN_EXCHANGE_GRANT,
] as const;
export type ClientGrantType = (typeof GRANT_TYPES)[number];
export type ClientType = 'public' | 'confidential';

const ASSURANCE = ['recovery', 'email', 'passkey', 'sensitive'] as const;
const PRINCIPAL_TYPES = ['human', 'agent'] as const;

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
   * `profile`. `offline_access` is kept only with the refresh_token grant. `orgs` releases the
   * account's memberships and is registered only when asked for (docs/orgs.md#groups-for-relying-parties).
   */
  scope: SUPPORTED_SCOPES.filter((scope) => scope !== 'orgs').join(' '),
  resources: [],
  post_logout_redirect_uris: [],
  access: { humans: true, agents: false },
  dpop_bound_access_tokens: false,
  in_place: false,
} as const;

const LIMITS = {
  redirectUris: 20,
  resources: 20,
  routes: 200,
  jwksKeys: 10,
  text: 200,
  acceptClients: 50,
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
  if (!Array.isArray(value) || value.length === 0) bad('access.orgs must be a non-empty list of {slug, roles?}');
  if (value.length > LIMITS.allowEntries) bad(`access.orgs has more than ${LIMITS.allowEntries} entries`);
  const problems = checkAllowRules({ orgs: value }, 'access');
  if (problems.length > 0) bad(problems.join('; '));
  return (value as OrgRule[]).map(({ slug, roles }) => ({ slug: slug.toLowerCase(), ...(roles ? { roles } : {}) }));
}

function validateGateway(value: unknown, scopeTokens: (v: unknown) => string[]): GatewayPolicy {
  if (!isObject(value)) bad('gateway must be an object');
  const { mode } = value;
  if (mode !== 'observe' && mode !== 'canary' && mode !== 'enforce')
    bad('gateway.mode must be one of observe, canary, enforce');
  const policy: GatewayPolicy = { mode, routes: [] };
  if (value.canary_percent !== undefined) {
    const percent = value.canary_percent;
    if (typeof percent !== 'number' || !Number.isInteger(percent) || percent < 0 || percent > 100)
      bad('gateway.canary_percent must be an integer from 0 to 100');
    policy.canary_percent = percent;
  } else if (mode === 'canary') {
    bad('gateway.canary_percent is required in canary mode');
  }
  if (value.accept_clients !== undefined) {
    const accept = stringArray(value.accept_clients, 'gateway.accept_clients', LIMITS.acceptClients);
    if (accept.some((id) => id.length === 0 || id.length > LIMITS.text))
      bad('gateway.accept_clients must list client ids');
    if (accept.length > 0) policy.accept_clients = [...new Set(accept)];
  }
  if (!Array.isArray(value.routes)) bad('gateway.routes must be an array');
  if (value.routes.length > LIMITS.routes) bad(`gateway.routes has more than ${LIMITS.routes} entries`);
  const seen = new Set<string>();
  value.routes.forEach((raw, i) => {
    const at = `gateway.routes[${i}]`;
    if (!isObject(raw)) bad(`${at} must be an object`);
    const known = ['path', 'min_assurance', 'principals', 'scopes', 'dpop', 'public', 'allow', 'mcp', 'tools'];
    const unknown = Object.keys(raw).find((key) => !known.includes(key));
    if (unknown !== undefined) bad(`${at}.${unknown} is not a route field`);
    const { path } = raw;
    if (typeof path !== 'string' || !path.startsWith('/') || path.length > 500 || /[?#\s]/.test(path))
      bad(`${at}.path must be an absolute path without query or fragment`);
    if (path === '/_gate' || path.startsWith('/_gate/')) bad(`${at}.path must not be under the reserved /_gate/`);
    if (seen.has(path)) bad(`${at}.path repeats another route`);
    seen.add(path);
    const route: RoutePolicy = { path };
    if (raw.min_assurance !== undefined) {
      if (!(ASSURANCE as readonly unknown[]).includes(raw.min_assurance))
        bad(`${at}.min_assurance must be one of ${ASSURANCE.join(', ')}`);
      route.min_assurance = raw.min_assurance as RoutePolicy['min_assurance'];
    }
    if (raw.principals !== undefined) {
      const principals = Array.isArray(raw.principals) ? raw.principals : [null];
      if (principals.length === 0 || principals.some((p) => !(PRINCIPAL_TYPES as readonly unknown[]).includes(p)))
        bad(`${at}.principals must list human and/or agent`);
      route.principals = [...new Set(principals)] as RoutePolicy['principals'];
    }
    if (raw.scopes !== undefined) {
      if (!Array.isArray(raw.scopes) || raw.scopes.some((s) => typeof s !== 'string' || s.includes(' ')))
        bad(`${at}.scopes must be an array of scope tokens`);
      route.scopes = scopeTokens(raw.scopes.join(' '));
    }
    if (raw.dpop !== undefined) {
      if (raw.dpop !== 'required' && raw.dpop !== 'allowed') bad(`${at}.dpop must be required or allowed`);
      route.dpop = raw.dpop;
    }
    if (raw.allow !== undefined) {
      // docs/gateway.md#access-rules; every problem named at once, like the rest of the metadata.
      const problems = checkAllowRules(raw.allow, `${at}.allow`);
      if (problems.length > 0) bad(problems.join('; '));
      const entries = Object.values(raw.allow as Record<string, unknown[]>).reduce((n, list) => n + list.length, 0);
      if (entries > LIMITS.allowEntries) bad(`${at}.allow has more than ${LIMITS.allowEntries} entries`);
      route.allow = raw.allow as AllowRules;
    }
    if (raw.mcp !== undefined) {
      if (typeof raw.mcp !== 'boolean') bad(`${at}.mcp must be a boolean`);
      if (raw.mcp) route.mcp = true;
    }
    if (raw.tools !== undefined) {
      // docs/gateway.md#mcp-routes: rules per tool only mean something where tool calls are read.
      if (route.mcp !== true) bad(`${at}.tools needs mcp: true`);
      const problems = checkToolRules(raw.tools, `${at}.tools`);
      if (problems.length > 0) bad(problems.join('; '));
      if (Object.keys(raw.tools as object).length > LIMITS.routes)
        bad(`${at}.tools has more than ${LIMITS.routes} tools`);
      route.tools = raw.tools as Record<string, ToolRule>;
    }
    if (raw.public !== undefined) {
      if (raw.public !== true) bad(`${at}.public must be true when present`);
      if (
        route.min_assurance ||
        route.principals ||
        route.scopes ||
        route.dpop === 'required' ||
        route.allow ||
        route.mcp
      )
        bad(
          `${at} is public and cannot also demand assurance, principals, scopes, DPoP or allow rules, or be an MCP route`,
        );
      route.public = true;
    }
    policy.routes.push(route);
  });
  return policy;
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
    body.grant_types === undefined ? [...CLIENT_DEFAULTS.grant_types] : stringArray(body.grant_types, 'grant_types', 5);
  const unknownGrant = grantTypes.find((g) => !(GRANT_TYPES as readonly string[]).includes(g));
  if (unknownGrant !== undefined)
    bad(`grant_types may hold ${GRANT_TYPES.join(', ')} only, not ${unknownGrant.slice(0, 60)}`);
  // A CLI or a TV may sign people in through the device grant alone, and a service acting for
  // people may only exchange their tokens: neither needs a redirect URI.
  const withCode = grantTypes.includes('authorization_code');
  if (!withCode && !grantTypes.includes(DEVICE_CODE_GRANT) && !grantTypes.includes(TOKEN_EXCHANGE_GRANT))
    bad(`grant_types must include authorization_code, ${DEVICE_CODE_GRANT} or ${TOKEN_EXCHANGE_GRANT}`);

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
    if (!isObject(a)) bad('access must be {"humans": boolean, "agents": boolean, "orgs"?: [{slug, roles?}]}');
    const humans = a.humans ?? CLIENT_DEFAULTS.access.humans;
    const agents = a.agents ?? CLIENT_DEFAULTS.access.agents;
    if (typeof humans !== 'boolean' || typeof agents !== 'boolean')
      bad('access must be {"humans": boolean, "agents": boolean, "orgs"?: [{slug, roles?}]}');
    if (!humans && !agents) bad('access must allow humans, agents or both');
    access = { humans, agents };
    if (a.orgs !== undefined) access.orgs = validateAccessOrgs(a.orgs);
  }
  if (grantTypes.includes(JWT_BEARER_GRANT) && !access.agents)
    bad(`grant_types ${JWT_BEARER_GRANT} admits agents: register it with "access": {"humans": …, "agents": true}`);

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
