import { oauthError } from './errors.js';
import { parseScope } from './scope.js';

/**
 * Token exchange for delegation (RFC 8693): a client holding a person's access token gets one
 * aimed at another resource, no broader, naming itself as the actor (`act`). Pure: the caller
 * verifies the subject token and decides whether the person allowed this client.
 */

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** RFC 8693 §3: a JWT; as an actor token, an assertion signed by an agent's key. */
export const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
/** The actor token types accepted (docs/oidc.md §7.6). */
export const ACTOR_TOKEN_TYPES = [ACCESS_TOKEN_TYPE, JWT_TOKEN_TYPE] as const;
export type ActorTokenType = (typeof ACTOR_TOKEN_TYPES)[number];
/** How deep `act` may nest (each exchange of an exchanged token adds one level). */
const MAX_ACTOR_DEPTH = 5;

/** RFC 8693 §4.1: who acts, and who acted before them. */
export interface ActorClaim {
  sub: string;
  act?: ActorClaim;
}

export interface ExchangeRequest {
  subjectToken: string;
  /** The scopes asked for; undefined means those of the subject token. */
  scopes?: string[];
  /** RFC 8693 §2.1: a token naming who acts, when the actor is not the authenticated client. */
  actor?: { token: string; type: ActorTokenType };
}

function single(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 8192)
    throw oauthError('invalid_request', `${name} must be one non-empty string`);
  return value;
}

/**
 * RFC 8693 §2.1: `subject_token` with `subject_token_type` access_token (the only kind offered);
 * `requested_token_type` access_token when sent; `actor_token` optional, and then
 * `actor_token_type` required (an access token or a JWT; never one without the other);
 * `audience` is not offered (name the target with `resource`).
 */
export function readExchangeRequest(body: Record<string, unknown>): ExchangeRequest {
  const subjectToken = single(body, 'subject_token');
  if (!subjectToken) throw oauthError('invalid_request', 'subject_token is required');
  if (single(body, 'subject_token_type') !== ACCESS_TOKEN_TYPE)
    throw oauthError('invalid_request', `subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  const requested = single(body, 'requested_token_type');
  if (requested !== undefined && requested !== ACCESS_TOKEN_TYPE)
    throw oauthError('invalid_request', `requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
  const actorToken = single(body, 'actor_token');
  const actorType = single(body, 'actor_token_type');
  // §2.1: actor_token_type is REQUIRED with an actor_token and MUST NOT be sent without one.
  if ((actorToken === undefined) !== (actorType === undefined))
    throw oauthError('invalid_request', 'actor_token and actor_token_type go together');
  if (actorType !== undefined && !(ACTOR_TOKEN_TYPES as readonly string[]).includes(actorType))
    throw oauthError('invalid_request', `actor_token_type must be one of ${ACTOR_TOKEN_TYPES.join(', ')}`);
  if (body.audience !== undefined)
    throw oauthError('invalid_target', 'audience is not offered: name the target with resource');
  const scope = single(body, 'scope');
  return {
    subjectToken,
    ...(scope !== undefined ? { scopes: parseScope(scope) } : {}),
    ...(actorToken !== undefined ? { actor: { token: actorToken, type: actorType as ActorTokenType } } : {}),
  };
}

/** RFC 8693 §2.1 `scope`: an exchange may narrow, never widen, what the subject token holds. */
export function narrowScopes(held: readonly string[], requested: readonly string[] | undefined): string[] {
  // The ID token's and refresh's scopes mean nothing on a token for another resource.
  const usable = held.filter((scope) => scope !== 'offline_access');
  if (requested === undefined) return usable;
  const wider = requested.find((scope) => !usable.includes(scope));
  if (wider !== undefined)
    throw oauthError('invalid_scope', `the subject token does not hold scope ${wider.slice(0, 60)}`);
  return [...requested];
}

/** RFC 8693 §4.1: the new actor, with the subject token's own `act` (earlier actors) nested inside. */
export function actorClaim(actor: string, prior: unknown): ActorClaim {
  let depth = 0;
  for (let at = prior as ActorClaim | undefined; at; at = at.act) {
    if (typeof at !== 'object' || typeof at.sub !== 'string')
      throw oauthError('invalid_request', 'the subject token carries a malformed act claim');
    if (++depth >= MAX_ACTOR_DEPTH) throw oauthError('invalid_request', 'the delegation chain is too long');
  }
  return prior ? { sub: actor, act: prior as ActorClaim } : { sub: actor };
}

/**
 * The actors an `act` claim names, newest first (what the gateway sends as `X-Auth-Actor` and a
 * receipt records); an empty list for no claim or a malformed one.
 */
export function actorChain(act: unknown): string[] {
  const chain: string[] = [];
  for (let at = act as ActorClaim | undefined; at && chain.length < MAX_ACTOR_DEPTH + 1; at = at.act) {
    if (typeof at !== 'object' || typeof at.sub !== 'string') return [];
    chain.push(at.sub);
  }
  return chain;
}
