import { isValidCodeChallenge } from '../pkce/check-pkce.js';
import { isKeyplaneError } from '../errors/keyplane-error.js';
import type { AssuranceLevel } from '../assurance/assurance.js';
import { isAssuranceLevel, rankAssurance } from '../assurance/assurance.js';
import { isJwkThumbprint } from './access-token-header.js';
import type { OAuthErrorCode } from './errors.js';
import { matchRedirectUri } from './redirect-uri.js';
import { checkResource } from './resource.js';
import { isClientIdUrl } from './client-id-metadata.js';
import { SUPPORTED_SCOPES, parseScope } from './scope.js';
import { decideConsent, type Approval } from '../consent/decide-consent.js';

export { coversRequest, type Approval } from '../consent/decide-consent.js';

/**
 * Validation of an authorization request (RFC 6749 §4.1.1, OIDC Core §3.1.2.1, RFC 7636,
 * RFC 8707, RFC 9449 §10) against the registered client. Pure: the caller looks the client up.
 *
 * The order matters (RFC 6749 §4.1.2.1, RFC 9700 §4.11): until the client and its redirect URI
 * are known exactly, nothing is redirected; after that, every problem goes back to that URI.
 */

/** `form_post`: OAuth 2.0 Form Post Response Mode; `web_message`: the in-place popup (docs/in-place.md). */
export type ResponseMode = 'query' | 'form_post' | 'web_message';
export const RESPONSE_MODES: readonly ResponseMode[] = ['query', 'form_post', 'web_message'];

/** OIDC Core §3.1.2.1 `prompt` values this provider honours. */
export type PromptValue = 'none' | 'login' | 'consent' | 'select_account';
const PROMPT_VALUES: readonly PromptValue[] = ['none', 'login', 'consent', 'select_account'];

/** Parameters as a query string or form body parses them: a repeated parameter is an array. */
export type RawParams = Record<string, unknown>;

export interface AuthorizationClient {
  clientId: string;
  redirectUris: readonly string[];
  /** RFC 8252 §7.3: loopback IP redirect URIs match on any port (native clients). */
  loopbackAnyPort?: boolean;
  scope: string;
  grantTypes: readonly string[];
  resources: readonly string[];
  allowsHumans: boolean;
  /**
   * The API scopes (docs/apis.md) this client may ask for at `apiScopes.resource`: an API's
   * scopes are granted only with a request for its resource, so a token never carries another's.
   */
  apiScopes?: { resource: string; names: readonly string[] };
  /** OIDC Registration §2 `default_max_age` (seconds): the `max_age` of a request without one. */
  defaultMaxAge?: number;
  /** OIDC Registration §2 `default_acr_values`: the `acr_values` of a request without them. */
  defaultAcrValues?: readonly string[];
}

export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  responseMode: ResponseMode;
  state?: string;
  nonce?: string;
  scopes: string[];
  resource?: string;
  codeChallenge: string;
  /** `none`, `login`, `consent` and `select_account` (OIDC Core §3.1.2.1); an empty list when absent. */
  prompt: PromptValue[];
  /** Seconds. */
  maxAge?: number;
  /** The weakest acceptable level among the `acr_values` this server knows; undefined when none. */
  acr?: AssuranceLevel;
  dpopJkt?: string;
  /** OIDC Core §3.1.2.1: an ID token this server issued naming who should be signed in (checked by the caller). */
  idTokenHint?: string;
}

/** Where an error may be sent: only ever a redirect URI that matched the registration exactly. */
export interface ErrorTarget {
  redirectUri: string;
  responseMode: ResponseMode;
  state?: string;
}

export type AuthorizationCheck =
  | { ok: true; request: AuthorizationRequest }
  /** Shown on a page: the client or the redirect URI is not trustworthy (never redirected). */
  | { ok: false; target: null; description: string }
  | { ok: false; target: ErrorTarget; error: OAuthErrorCode; description: string };

/** Single-valued parameters: sending one twice is invalid_request (RFC 6749 §3.1). */
const SINGLE = [
  'client_id',
  'redirect_uri',
  'response_type',
  'response_mode',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  'acr_values',
  'dpop_jkt',
  'login_hint',
  'ui_locales',
  'id_token_hint',
  'request',
  'request_uri',
];
const MAX = { state: 2048, nonce: 512, acr: 512, idTokenHint: 8192 };

function single(params: RawParams, name: string): string | undefined {
  const value = params[name];
  return typeof value === 'string' ? value : undefined;
}

/** The `client_id` of a request when it is one plain value; null otherwise. */
export function readClientId(params: RawParams): string | null {
  const value = single(params, 'client_id');
  // A Client ID Metadata Document URL may be longer than the ids this server issues.
  const max = value !== undefined && isClientIdUrl(value) ? 2000 : 100;
  return value !== undefined && value.length > 0 && value.length <= max ? value : null;
}

/**
 * Where errors about these parameters may go: their `redirect_uri` when it is exactly one the
 * client registered (with their `response_mode` and `state`), otherwise nowhere (null).
 */
export function errorTargetOf(
  params: RawParams,
  client: Pick<AuthorizationClient, 'redirectUris' | 'loopbackAnyPort'>,
): ErrorTarget | null {
  const redirectUri = params.redirect_uri;
  if (!matchRedirectUri(client.redirectUris, redirectUri, { loopbackAnyPort: client.loopbackAnyPort === true }))
    return null;
  const rawMode = params.response_mode;
  const responseMode: ResponseMode =
    rawMode === 'web_message' || rawMode === 'form_post' ? (rawMode as ResponseMode) : 'query';
  const state = single(params, 'state');
  return { redirectUri, responseMode, ...(state !== undefined && state.length <= MAX.state ? { state } : {}) };
}

/**
 * Checks every parameter of an authorization request for a known client. Unknown
 * `redirect_uri` means an error page; every later problem is redirected with RFC 6749 codes.
 */
export function checkAuthorizationRequest(params: RawParams, client: AuthorizationClient): AuthorizationCheck {
  const target = errorTargetOf(params, client);
  if (!target) {
    return {
      ok: false,
      target: null,
      description:
        params.redirect_uri === undefined
          ? 'the request has no redirect_uri'
          : 'the redirect_uri is not registered for this client (it must match exactly)',
    };
  }
  const { redirectUri, responseMode } = target;
  const rawMode = params.response_mode;
  const state = single(params, 'state');
  const refuse = (error: OAuthErrorCode, description: string): AuthorizationCheck => ({
    ok: false,
    target,
    error,
    description,
  });

  const repeated = SINGLE.find((name) => Array.isArray(params[name]));
  if (repeated) return refuse('invalid_request', `${repeated} must not be repeated`);
  if (rawMode !== undefined && !(RESPONSE_MODES as readonly unknown[]).includes(rawMode))
    return refuse('invalid_request', 'response_mode must be query, form_post or web_message');
  if (state !== undefined && state.length > MAX.state)
    return refuse('invalid_request', `state is longer than ${MAX.state} characters`);
  // Request objects are resolved into plain parameters before this check (resolveAuthorizationRequest).
  if (params.request !== undefined || params.request_uri !== undefined)
    return refuse('invalid_request', 'the request object was not resolved');
  // OIDC Core §7.2.1: self-issued OP registration by parameter is not offered.
  if (params.registration !== undefined)
    return refuse('registration_not_supported', 'the registration parameter is not supported: register the client');

  const responseType = single(params, 'response_type');
  if (responseType === undefined || responseType === '') return refuse('invalid_request', 'response_type is required');
  if (responseType !== 'code')
    return refuse(
      'unsupported_response_type',
      'only response_type=code is offered: implicit and hybrid flows are refused',
    );

  if (!client.allowsHumans) return refuse('unauthorized_client', 'this client is not registered for human sign-in');

  // RFC 7636 + RFC 9700 §2.1.1: PKCE with S256 for every client; plain (the RFC 7636 default) is refused.
  const challenge = single(params, 'code_challenge');
  if (challenge === undefined)
    return refuse('invalid_request', 'PKCE is required: send code_challenge with code_challenge_method=S256');
  const method = single(params, 'code_challenge_method');
  if (method !== 'S256') return refuse('invalid_request', 'code_challenge_method must be S256 (plain is refused)');
  if (!isValidCodeChallenge(challenge, method))
    return refuse('invalid_request', 'code_challenge must be a base64url SHA-256 digest (43 characters)');

  let requested: string[];
  try {
    requested = parseScope(params.scope);
  } catch {
    return refuse('invalid_scope', 'scope has a malformed token');
  }
  let resource: string | undefined;
  try {
    resource = checkResource(client.resources, params.resource);
  } catch (error) {
    if (isKeyplaneError(error)) return refuse('invalid_target', error.message);
    throw error;
  }
  const scopes = grantableScopes(requested, client, resource);

  const promptValue = single(params, 'prompt');
  const prompt = promptValue === undefined || promptValue === '' ? [] : [...new Set(promptValue.split(' '))];
  const badPrompt = prompt.find((p) => !(PROMPT_VALUES as readonly string[]).includes(p));
  if (badPrompt !== undefined)
    return refuse('invalid_request', `prompt ${badPrompt.slice(0, 40)} is not supported (${PROMPT_VALUES.join(', ')})`);
  if (prompt.includes('none') && prompt.length > 1)
    return refuse('invalid_request', 'prompt=none cannot be combined with other values');

  const maxAgeValue = single(params, 'max_age');
  let maxAge: number | undefined;
  if (maxAgeValue !== undefined) {
    if (!/^\d{1,9}$/.test(maxAgeValue))
      return refuse('invalid_request', 'max_age must be a non-negative integer (seconds)');
    maxAge = Number(maxAgeValue);
  } else if (client.defaultMaxAge !== undefined) {
    maxAge = client.defaultMaxAge;
  }

  const acrValues = single(params, 'acr_values') ?? client.defaultAcrValues?.join(' ');
  if (acrValues !== undefined && acrValues.length > MAX.acr) return refuse('invalid_request', 'acr_values is too long');
  // acr_values lists acceptable levels; any of them satisfies the request, so the weakest known one is the requirement.
  const known = (acrValues ?? '').split(' ').filter(isAssuranceLevel);
  const acr = known.length ? known.reduce((a, b) => (rankAssurance(a) <= rankAssurance(b) ? a : b)) : undefined;

  const dpopJkt = single(params, 'dpop_jkt');
  if (dpopJkt !== undefined && !isJwkThumbprint(dpopJkt))
    return refuse('invalid_request', 'dpop_jkt must be a base64url SHA-256 JWK thumbprint');

  const nonce = single(params, 'nonce');
  if (nonce !== undefined && (nonce.length === 0 || nonce.length > MAX.nonce))
    return refuse('invalid_request', `nonce must be 1 to ${MAX.nonce} characters`);

  const idTokenHint = single(params, 'id_token_hint');
  if (idTokenHint !== undefined && (idTokenHint.length === 0 || idTokenHint.length > MAX.idTokenHint))
    return refuse('invalid_request', 'id_token_hint must be an ID token issued by this server');

  const request: AuthorizationRequest = {
    clientId: client.clientId,
    redirectUri,
    responseMode,
    scopes,
    codeChallenge: challenge,
    prompt: prompt as AuthorizationRequest['prompt'],
  };
  if (state !== undefined) request.state = state;
  if (nonce !== undefined) request.nonce = nonce;
  if (resource !== undefined) request.resource = resource;
  if (maxAge !== undefined) request.maxAge = maxAge;
  if (acr !== undefined) request.acr = acr;
  if (dpopJkt !== undefined) request.dpopJkt = dpopJkt;
  if (idTokenHint !== undefined) request.idTokenHint = idTokenHint;
  return { ok: true, request };
}

/**
 * The scopes a request is granted: those the provider knows and the client registered, and the
 * scopes of the requested resource's API that admits the client (docs/apis.md). OIDC Core
 * §3.1.2.1 says scope values the provider does not understand SHOULD be ignored, and RFC 6749 §3.3
 * lets it grant less than asked (the token response then names what was granted), so an unknown
 * or unregistered value is dropped rather than refused. `offline_access` stays only where the
 * refresh grant is registered (Core §11).
 */
export function grantableScopes(
  requested: readonly string[],
  client: Pick<AuthorizationClient, 'scope' | 'grantTypes' | 'apiScopes'>,
  resource?: string,
): string[] {
  const registered = client.scope.split(' ');
  const api = client.apiScopes !== undefined && client.apiScopes.resource === resource ? client.apiScopes.names : [];
  return requested.filter(
    (scope) =>
      ((SUPPORTED_SCOPES as readonly string[]).includes(scope) &&
        registered.includes(scope) &&
        (scope !== 'offline_access' || client.grantTypes.includes('refresh_token'))) ||
      api.includes(scope),
  );
}

/** The session facts a decision needs. */
export interface SessionFacts {
  /** The signed-in account (compared with an `id_token_hint`'s `sub`). */
  identityId: string;
  assurance: AssuranceLevel;
  /** ms */
  authTime: number;
}

/** An approval with the request's scopes and resource added (what the one-tap page approves). */
export function mergeApproval(
  before: Approval | null,
  request: Pick<AuthorizationRequest, 'scopes' | 'resource'>,
): Approval {
  const scopes = [...new Set([...(before?.scopes ?? []), ...request.scopes])];
  const resources = [
    ...new Set([...(before?.resources ?? []), ...(request.resource !== undefined ? [request.resource] : [])]),
  ];
  return { scopes, resources };
}

export type AuthorizationDecision =
  | { action: 'issue'; approval: 'remembered' | 'prompt_none' | 'first_party' }
  | { action: 'consent' }
  | { action: 'login' }
  | { action: 'select_account' }
  | { action: 'step_up' }
  | { action: 'refuse'; error: 'login_required' | 'interaction_required' | 'consent_required'; description: string };

/**
 * What to do with a valid request (OIDC Core §3.1.2.3-§3.1.2.6): sign in (no session,
 * `prompt=login` not yet honoured, `max_age` exceeded, or an `id_token_hint` naming another
 * account), offer the account choice (`prompt=select_account`), step up (`acr_values` unmet), ask
 * for approval (the one-tap page), or issue a code at once. A code is issued without the page
 * only when an earlier approval covers the scopes and resource, or the operator marked the
 * client first-party; under `prompt=none` every interaction becomes `login_required`,
 * `interaction_required` or `consent_required` (§3.1.2.6), never a code.
 */
export function decideAuthorization(input: {
  request: AuthorizationRequest;
  session: SessionFacts | undefined;
  now: number;
  /** When the request first sent the user to sign in: a sign-in at or after it honours `prompt=login` and `max_age`. */
  loginAfter?: number;
  /** What the account approved for this client before, or null. */
  approval: Approval | null;
  /** The operator marked the client first-party (`first_party: true`): no approval page. */
  firstParty?: boolean;
  /** The `sub` of a verified `id_token_hint`: the account the client expects to be signed in. */
  hintSubject?: string;
  /** The person chose the signed-in account on the account-choice page (`prompt=select_account`). */
  accountChosen?: boolean;
}): AuthorizationDecision {
  const { request, session, now } = input;
  const silent = request.prompt.includes('none');
  if (!session) {
    return silent
      ? { action: 'refuse', error: 'login_required', description: 'there is no signed-in session' }
      : { action: 'login' };
  }
  // A sign-in made after the request first sent the user to sign in honours both prompt=login
  // and max_age (even max_age=0, which a clock alone could never satisfy).
  const signedInSince = input.loginAfter !== undefined && session.authTime >= input.loginAfter;
  // A sign-in or an explicit choice made for this request settles which account it is for.
  const chosen = signedInSince || input.accountChosen === true;
  // §3.1.2.1 id_token_hint: another account is signed in than the one the client expects.
  if (input.hintSubject !== undefined && input.hintSubject !== session.identityId && !chosen) {
    return silent
      ? {
          action: 'refuse',
          error: 'login_required',
          description: 'the signed-in account is not the one id_token_hint names',
        }
      : { action: 'login' };
  }
  const freshLoginNeeded = request.prompt.includes('login') && !signedInSince;
  const tooOld = request.maxAge !== undefined && now - session.authTime > request.maxAge * 1000 && !signedInSince;
  const weak = request.acr !== undefined && rankAssurance(session.assurance) < rankAssurance(request.acr);
  if (freshLoginNeeded || tooOld) {
    if (silent) return { action: 'refuse', error: 'login_required', description: 'the sign-in is older than max_age' };
    // A step-up is itself a fresh authentication of the same account (it raises auth_time), so a
    // request for more assurance with max_age=0 (RFC 9470 §4) needs one ceremony, not two.
    return weak ? { action: 'step_up' } : { action: 'login' };
  }
  // §3.1.2.1 select_account: one session per browser, so the choice is this account or another.
  if (request.prompt.includes('select_account') && !chosen) return { action: 'select_account' };
  if (weak) {
    return silent
      ? { action: 'refuse', error: 'interaction_required', description: `acr_values ${request.acr} needs a step-up` }
      : { action: 'step_up' };
  }
  if (request.prompt.includes('consent')) return { action: 'consent' };
  const standing = decideConsent({ firstParty: input.firstParty === true, approval: input.approval, release: request });
  if (standing.approved)
    return {
      action: 'issue',
      approval: standing.by === 'first_party' ? 'first_party' : silent ? 'prompt_none' : 'remembered',
    };
  if (silent)
    return {
      action: 'refuse',
      error: 'consent_required',
      description: 'this app has not been approved for this access: ask without prompt=none',
    };
  return { action: 'consent' };
}

/**
 * Whether a grant may outlive the session that started it: only when the user approved
 * `offline_access` on the approval page (now or before) for a client that is not a gateway. A
 * gateway's refresh token stands for a browser session, and a first-party skip is no approval.
 */
export function outlivesSession(input: {
  scopes: readonly string[];
  gatewayClient: boolean;
  approval: 'new' | 'remembered' | 'prompt_none' | 'first_party';
}): boolean {
  return input.scopes.includes('offline_access') && !input.gatewayClient && input.approval !== 'first_party';
}

/** The redirect URI with response parameters added to its query (RFC 6749 §4.1.2; existing query kept). */
export function buildRedirect(redirectUri: string, params: Record<string, string>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.append(name, value);
  return url.toString();
}
