import type { ActorClaim } from '../oauth/token-exchange.js';
/**
 * Claim sets for the tokens Keyplane issues (docs/oidc.md, "Tokens").
 * Pure: the caller passes `now`, the session's proved assurance and the principal.
 */

import { isAssuranceLevel, rankAssurance, type AssuranceLevel } from '../assurance/assurance.js';

export type { AssuranceLevel };

export type Principal =
  { type: 'human'; id: string } | { type: 'agent'; id: `agt_${string}`; owner: string; kind: string };

export interface SvcClaim {
  assurance: AssuranceLevel;
  principal: Principal;
}

/**
 * The assurance a token may state: what the sign-in proved, or less when the caller asks for
 * less, never more (docs/oidc.md).
 */
export function capAssurance(proved: AssuranceLevel, reported?: AssuranceLevel): AssuranceLevel {
  if (!isAssuranceLevel(proved)) throw new TypeError('unknown assurance level');
  if (reported === undefined) return proved;
  if (!isAssuranceLevel(reported)) throw new TypeError('unknown assurance level');
  return rankAssurance(reported) < rankAssurance(proved) ? reported : proved;
}

interface CommonInput {
  issuer: string;
  /** The subject (`sub`): the identityId of a human, or the agent id of an agent. */
  subject: string;
  clientId: string;
  /** Milliseconds since the epoch. */
  now: number;
  lifetimeSeconds: number;
  /** When the user last authenticated, in milliseconds. */
  authTime: number;
  /** What the session proved. */
  provedAssurance: AssuranceLevel;
  /** An assurance to state instead, honoured only when it is not above the proved one. */
  reportedAssurance?: AssuranceLevel;
  /** Authentication methods (RFC 8176 values where they exist). */
  amr: readonly string[];
  principal: Principal;
  /** The connection a federated sign-in came through (docs/federation.md#tokens): `idp` and `idp_name`. */
  idp?: { id: string; name: string };
}

export interface IdTokenInput extends CommonInput {
  nonce?: string;
  /** Opaque session id (OIDC Front-/Back-Channel Logout `sid`). */
  sid?: string;
  scopes: readonly string[];
  /** The account's primary email; stated only with scope `email`. */
  email?: { address: string; verified: boolean };
  /** Profile claims; stated only with scope `profile`. */
  profile?: { name?: string; preferred_username?: string };
  /** The account's memberships; stated only with scope `orgs`. */
  orgs?: readonly OrgClaim[];
  /** The account's teams as `<org slug>/<team slug>`; stated only with scope `groups`. */
  groups?: readonly string[];
}

/** One entry of the `orgs` claim (scope `orgs`): an org the account belongs to and its role there. */
export interface OrgClaim {
  slug: string;
  role: 'owner' | 'admin' | 'member';
}

export interface IdTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  exp: number;
  iat: number;
  auth_time: number;
  nonce?: string;
  acr: AssuranceLevel;
  amr: string[];
  sid?: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  preferred_username?: string;
  orgs?: OrgClaim[];
  groups?: string[];
  svc: SvcClaim;
  idp?: string;
  idp_name?: string;
}

export interface AccessTokenInput extends CommonInput {
  /** The RFC 8707 resource granted (already checked exact); else the audience is the client. */
  resource?: string;
  scopes: readonly string[];
  jti: string;
  /** RFC 7638 thumbprint of the DPoP key the token is bound to. */
  dpopJkt?: string;
  /** RFC 8693 §4.1: who acts for the subject (a token exchange's client), earlier actors nested. */
  act?: ActorClaim;
}

export interface AccessTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  exp: number;
  iat: number;
  jti: string;
  client_id: string;
  scope: string;
  auth_time: number;
  acr: AssuranceLevel;
  amr: string[];
  svc: SvcClaim;
  idp?: string;
  idp_name?: string;
  cnf?: { jkt: string };
  act?: ActorClaim;
}

/**
 * A token a client holds for itself (the `client_credentials` grant, RFC 6749 §4.4): RFC 9068
 * §2.2 makes `sub` the client id; no person signed in, so it has no `auth_time`, `acr`, `amr` or
 * `svc` principal.
 */
/**
 * The `jti` prefix of client-credentials tokens: they stand on no grant row, so verification
 * checks that the client is still registered for the grant.
 */
export const CLIENT_CREDENTIALS_JTI = 'ccg';

export interface ClientAccessTokenClaims {
  iss: string;
  sub: string;
  aud: string;
  exp: number;
  iat: number;
  jti: string;
  client_id: string;
  scope: string;
  cnf?: { jkt: string };
}

function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function checkPrincipal(subject: string, principal: Principal): Principal {
  if (principal.type === 'human') {
    // A human principal is the subject itself ({"type": "human", "id": <sub>}, docs/oidc.md, "Tokens").
    if (principal.id !== subject) throw new TypeError('a human principal id must equal the subject');
    return { type: 'human', id: principal.id };
  }
  if (principal.type === 'agent') {
    if (!/^agt_[A-Za-z0-9_-]+$/.test(principal.id)) throw new TypeError('an agent principal id must start with agt_');
    if (!principal.owner || !principal.kind) throw new TypeError('an agent principal needs owner and kind');
    if (principal.owner === principal.id) throw new TypeError('an agent cannot own itself');
    return { type: 'agent', id: principal.id, owner: principal.owner, kind: principal.kind };
  }
  throw new TypeError('unknown principal type');
}

function common(input: CommonInput) {
  if (!Number.isInteger(input.lifetimeSeconds) || input.lifetimeSeconds <= 0)
    throw new TypeError('lifetimeSeconds must be a positive integer');
  const assurance = capAssurance(input.provedAssurance, input.reportedAssurance);
  const iat = seconds(input.now);
  return {
    iat,
    exp: iat + input.lifetimeSeconds,
    auth_time: seconds(input.authTime),
    acr: assurance,
    amr: [...new Set(input.amr)],
    svc: { assurance, principal: checkPrincipal(input.subject, input.principal) },
    ...(input.idp ? { idp: input.idp.id, idp_name: input.idp.name } : {}),
  };
}

/**
 * The claims of an ID token (OIDC Core §2 and docs/oidc.md): `aud` is the client
 * alone, never a resource; `email` and `email_verified` only with scope `email`, and
 * `email_verified` is exactly `true` only for a verified address.
 */
export function buildIdTokenClaims(input: IdTokenInput): IdTokenClaims {
  const base = common(input);
  const claims: IdTokenClaims = {
    iss: input.issuer,
    sub: input.subject,
    aud: input.clientId,
    exp: base.exp,
    iat: base.iat,
    auth_time: base.auth_time,
    acr: base.acr,
    amr: base.amr,
    svc: base.svc,
    ...(base.idp !== undefined ? { idp: base.idp, idp_name: base.idp_name } : {}),
  };
  if (input.nonce !== undefined) claims.nonce = input.nonce;
  if (input.sid !== undefined) claims.sid = input.sid;
  if (input.scopes.includes('email') && input.email) {
    claims.email = input.email.address;
    claims.email_verified = input.email.verified === true;
  }
  if (input.scopes.includes('profile') && input.profile) {
    if (input.profile.name !== undefined) claims.name = input.profile.name;
    if (input.profile.preferred_username !== undefined) claims.preferred_username = input.profile.preferred_username;
  }
  if (input.scopes.includes('orgs') && input.orgs) claims.orgs = input.orgs.map(({ slug, role }) => ({ slug, role }));
  if (input.scopes.includes('groups') && input.groups) claims.groups = [...input.groups];
  return claims;
}

/**
 * The claims of an RFC 9068 JWT access token: `aud` is the granted resource or else the
 * client, `client_id` and `scope` always, `cnf.jkt` when DPoP-bound (RFC 9449 §6.1).
 */
export function buildAccessTokenClaims(input: AccessTokenInput): AccessTokenClaims {
  const base = common(input);
  const claims: AccessTokenClaims = {
    iss: input.issuer,
    sub: input.subject,
    aud: input.resource ?? input.clientId,
    exp: base.exp,
    iat: base.iat,
    jti: input.jti,
    client_id: input.clientId,
    scope: [...new Set(input.scopes)].join(' '),
    auth_time: base.auth_time,
    acr: base.acr,
    amr: base.amr,
    svc: base.svc,
    ...(base.idp !== undefined ? { idp: base.idp, idp_name: base.idp_name } : {}),
  };
  if (input.dpopJkt !== undefined) claims.cnf = { jkt: input.dpopJkt };
  if (input.act !== undefined) claims.act = input.act;
  return claims;
}
