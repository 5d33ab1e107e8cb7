import type { ActorClaim } from '#lib/oauth/token-exchange.js';
import type { JWTPayload } from 'jose';
import { effectiveAssurance } from '#lib/assurance/assurance.js';
import { fail } from '#lib/errors/keyplane-error.js';
import {
  CLIENT_CREDENTIALS_JTI,
  buildAccessTokenClaims,
  buildIdTokenClaims,
  type AssuranceLevel,
  type OrgClaim,
} from '#lib/tokens/claims.js';
import { checkJwtTimes, decodeJwt, verifyJwt } from '#lib/crypto/jwt.js';
import { signAccessToken, signIdToken } from '#lib/tokens/sign-token.js';
import { randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { Identity, StoredEmail, StoredGrant, Stores } from '../storage/interface.js';
import { isAccountActive } from '../accounts/lifecycle.js';
import { countedEmails } from '../orgs/claimed-addresses.js';
import { agentGrantStands } from '../agents/grants.js';
import { federatedIdp } from '../federation/idp-claims.js';

/**
 * Minting and checking the tokens of the OIDC provider. Access tokens are RFC 9068 JWTs whose
 * `jti` is `<grantId>.<random>`, so a revoked grant (a replayed code, a reused refresh token, a
 * revocation) invalidates every access token issued from it without a look-up table.
 */

/** What minting and checking tokens needs. */
export type TokenServices = Pick<ControlPlaneServices, 'config' | 'keys' | 'storage' | 'now'>;

/** The assurance a grant may still claim at `now`: `sensitive` only inside the step-up window. */
export function grantAssurance(
  services: Pick<TokenServices, 'config'>,
  grant: Pick<StoredGrant, 'assurance' | 'authTime'>,
  now: number,
): AssuranceLevel {
  if (grant.assurance !== 'sensitive') return grant.assurance;
  return effectiveAssurance(
    { assurance: 'passkey', stepUpAt: grant.authTime },
    now,
    services.config.lifetimes.stepUp * 1000,
  );
}

export interface MintInput {
  grant: StoredGrant;
  scopes: readonly string[];
  resource: string | null;
  dpopJkt: string | null;
  nonce: string | null;
  /** Whether to include an ID token (scope openid). */
  idToken: boolean;
  /** The identity's profile and email claims when the caller fetched them already. */
  claims?: UserClaims;
  /** RFC 8693: the actor of a token exchange. */
  act?: ActorClaim;
}

export interface Minted {
  accessToken: string;
  idToken?: string;
  expiresIn: number;
}

/** Signs the access token and (with scope openid) the ID token for a grant. */
export async function mintTokens(services: TokenServices, input: MintInput): Promise<Minted> {
  const { config, keys } = services;
  const now = services.now();
  const { grant } = input;
  const key = keys.current();
  const assurance = grantAssurance(services, grant, now);
  const common = {
    issuer: config.issuer,
    subject: grant.identityId,
    clientId: grant.clientId,
    now,
    authTime: grant.authTime,
    provedAssurance: assurance,
    amr: grant.amr,
    principal: { type: 'human' as const, id: grant.identityId },
    ...(await federatedIdp(services.storage, grant)),
  };
  const access = buildAccessTokenClaims({
    ...common,
    lifetimeSeconds: config.lifetimes.accessToken,
    scopes: input.scopes,
    jti: `${grant.grantId}.${randomToken(12)}`,
    ...(input.resource !== null ? { resource: input.resource } : {}),
    ...(input.dpopJkt !== null ? { dpopJkt: input.dpopJkt } : {}),
    ...(input.act ? { act: input.act } : {}),
  });
  const minted: Minted = { accessToken: await signAccessToken(access, key), expiresIn: config.lifetimes.accessToken };
  if (input.idToken) {
    const claims = buildIdTokenClaims({
      ...common,
      lifetimeSeconds: config.lifetimes.idToken,
      scopes: input.scopes,
      sid: grant.sessionId,
      ...(input.nonce !== null ? { nonce: input.nonce } : {}),
      ...(input.claims ?? (await userClaims(services, grant.identityId, input.scopes))),
    });
    minted.idToken = await signIdToken(claims, key);
  }
  return minted;
}

export interface UserClaims {
  email?: { address: string; verified: boolean };
  profile?: { name?: string; preferred_username?: string };
  /** Only read when the scopes include `orgs`. */
  orgs?: OrgClaim[];
  /** Only read when the scopes include `groups`. */
  groups?: string[];
}

/**
 * Profile and email facts of an identity, as ID token and userinfo state them (by scope); its
 * memberships and teams too when `scopes` include `orgs` / `groups`.
 */
export async function userClaims(
  services: Pick<ControlPlaneServices, 'storage'>,
  identityId: string,
  scopes: readonly string[] = [],
): Promise<UserClaims> {
  // Independent reads: on a pooled backend they travel together.
  const [identity, emails, memberships] = await Promise.all([
    services.storage.identities.get(identityId),
    services.storage.emails.listByIdentity(identityId),
    membershipClaims(services.storage, identityId, scopes),
  ]);
  return { ...claimsOf(identity, await countedEmails(services.storage, identity, emails)), ...memberships };
}

/** The `orgs` claim (scope `orgs`): every org the account belongs to, with its role, by slug. */
export async function orgsClaim(storage: Pick<Stores, 'orgs'>, identityId: string): Promise<OrgClaim[]> {
  const orgs = await storage.orgs.listForMember(identityId);
  return orgs.map(({ slug, role }) => ({ slug, role })).sort((a, b) => (a.slug < b.slug ? -1 : 1));
}

/** The `groups` claim (scope `groups`): every team the account belongs to, `<org slug>/<team slug>`. */
export async function groupsClaim(storage: Pick<Stores, 'teams'>, identityId: string): Promise<string[]> {
  return (await storage.teams.teamsOf(identityId)).map((t) => `${t.orgSlug}/${t.teamSlug}`);
}

/** The membership claims the scopes ask for: `orgs` and `groups`, each read only when asked. */
export async function membershipClaims(
  storage: Pick<Stores, 'orgs' | 'teams'>,
  identityId: string,
  scopes: readonly string[],
): Promise<Pick<UserClaims, 'orgs' | 'groups'>> {
  const [orgs, groups] = await Promise.all([
    scopes.includes('orgs') ? orgsClaim(storage, identityId) : undefined,
    scopes.includes('groups') ? groupsClaim(storage, identityId) : undefined,
  ]);
  return { ...(orgs ? { orgs } : {}), ...(groups ? { groups } : {}) };
}

/** `userClaims` from the account and its addresses read already. */
export function claimsOf(identity: Identity | null, emails: readonly StoredEmail[]): UserClaims {
  // A verified address first; an unverified one is stated with email_verified: false.
  const chosen = emails.find((e) => e.verifiedAt !== null) ?? emails[0];
  const out: UserClaims = {};
  if (chosen) out.email = { address: chosen.email, verified: chosen.verifiedAt !== null };
  if (identity) {
    out.profile = {
      preferred_username: identity.username,
      ...(identity.displayName ? { name: identity.displayName } : {}),
    };
  }
  return out;
}

export interface AccessTokenClaimsRead extends JWTPayload {
  sub: string;
  client_id: string;
  scope: string;
  jti: string;
  exp: number;
  cnf?: { jkt?: string };
  act?: ActorClaim;
}

/** The grant an access token's jti names. */
export function grantIdOfJti(jti: string): string | null {
  const dot = jti.indexOf('.');
  return dot > 0 ? jti.slice(0, dot) : null;
}

const TEN_YEARS_S = 10 * 365 * 86400;

/**
 * Checks a token this server signed: ES256 by a published kid (so `alg: none`, HS256 and unknown
 * kids fail), `typ`, issuer and the time claims against the services' clock. Throws when any fails.
 */
function verifySigned(
  services: TokenServices,
  token: string,
  typ: string,
  options: { ignoreExpiry?: boolean } = {},
): { payload: JWTPayload } {
  const { header } = decodeJwt(token);
  const key = typeof header.kid === 'string' ? services.keys.publicKey(header.kid) : undefined;
  if (!key) throw new Error('no published key has this kid');
  const { payload } = verifyJwt(token, key, { alg: 'ES256', typ, issuer: services.config.issuer });
  const timely = checkJwtTimes(
    payload,
    services.now(),
    options.ignoreExpiry ? { requireExp: false, toleranceSeconds: TEN_YEARS_S } : {},
  );
  if (!timely) throw new Error('the token is expired or not yet valid');
  return { payload: payload as JWTPayload };
}

/** Exchanges nest at most this deep (`act`, docs/oidc.md#76-token-exchange-for-delegation-rfc-8693), and a little more. */
const SOURCE_CHAIN_LIMIT = 8;

/**
 * Whether a grant still stands: not revoked, and, for an exchanged token's grant, neither is any
 * grant up the chain it was exchanged from (RFC 8693: an exchanged token never outlives its source).
 */
export async function grantStands(storage: TokenServices['storage'], grant: StoredGrant): Promise<boolean> {
  let current = grant;
  for (let depth = 0; depth <= SOURCE_CHAIN_LIMIT; depth++) {
    if (current.revokedAt !== null) return false;
    if (current.sourceGrantId === undefined) return true;
    const source = await storage.oidc.getGrant(current.sourceGrantId);
    // A source deleted with its account vouches for nothing.
    if (!source) return false;
    current = source;
  }
  return false;
}

/**
 * Verifies one of our access tokens: ES256 signature by a published kid (so `alg: none`, HS256
 * and unknown kids fail), `typ: at+jwt`, issuer, expiry, and that neither it nor its grant was
 * revoked. Throws `invalid_token`.
 */
export async function verifyAccessToken(services: TokenServices, token: string): Promise<AccessTokenClaimsRead> {
  let payload: JWTPayload;
  try {
    ({ payload } = verifySigned(services, token, 'at+jwt'));
  } catch {
    throw fail('invalid_token', 'the access token is invalid or expired');
  }
  const claims = payload as AccessTokenClaimsRead;
  if (
    typeof claims.jti !== 'string' ||
    typeof claims.sub !== 'string' ||
    typeof claims.client_id !== 'string' ||
    typeof claims.scope !== 'string'
  ) {
    throw fail('invalid_token', 'the access token is missing claims');
  }
  const grantId = grantIdOfJti(claims.jti);
  if (grantId === CLIENT_CREDENTIALS_JTI) {
    // A client's token for itself stands while the client is registered for the grant.
    const client = await services.storage.clients.get(claims.client_id);
    if (!client || claims.sub !== client.clientId || !client.metadata.grant_types.includes('client_credentials'))
      throw fail('invalid_token', 'the access token was revoked');
  } else if (grantId?.startsWith('agg_')) {
    if (!(await agentGrantStands(services, grantId, claims.client_id, claims.cnf?.jkt)))
      throw fail('invalid_token', 'the access token was revoked');
  } else {
    const grant = grantId ? await services.storage.oidc.getGrant(grantId) : null;
    if (!grant || grant.clientId !== claims.client_id || !(await grantStands(services.storage, grant)))
      throw fail('invalid_token', 'the access token was revoked');
    if (!(await isAccountActive(services.storage, grant.identityId)))
      throw fail('invalid_token', 'the account is disabled or deleted');
  }
  if (await services.storage.oidc.isAccessTokenRevoked(claims.jti))
    throw fail('invalid_token', 'the access token was revoked');
  return claims;
}

/** Verifies an ID token this server issued, for `id_token_hint` (an expired one is accepted, as OIDC RP-Initiated Logout allows). */
export async function verifyIdTokenHint(
  services: TokenServices,
  token: string,
): Promise<{ sub: string; aud: string; sid?: string } | null> {
  try {
    const { payload } = verifySigned(services, token, 'JWT', { ignoreExpiry: true });
    const aud = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
    if (typeof payload.sub !== 'string' || typeof aud !== 'string') return null;
    return { sub: payload.sub, aud, ...(typeof payload.sid === 'string' ? { sid: payload.sid } : {}) };
  } catch {
    return null;
  }
}
