import type { JWTVerifyGetKey } from 'jose';
import { checkJwt } from '#lib/crypto/jwt.js';
import { isAssuranceLevel, type AssuranceLevel } from '#lib/assurance/assurance.js';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import type { Membership } from '#lib/access/evaluate-access.js';
import { ORG_ROLES, type OrgRole } from '#lib/orgs/roles.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';

/**
 * Verifies the control plane's ID token at the gateway (OIDC Core §3.1.3.7): ES256 by a key of
 * the control plane's JWKS, `iss` = the control plane, `aud` = this gateway's client id (and
 * `azp` when there are other audiences), `exp`/`iat`, the `nonce` of this login, and a known
 * assurance and principal. An access token (`typ: at+jwt`) is never taken for an ID token.
 */

export interface IdTokenFacts {
  sub: string;
  assurance: AssuranceLevel;
  principalType: 'human' | 'agent';
  email?: string;
  emailVerified?: boolean;
  /** `preferred_username` (scope `profile`): how pages name the account. */
  username?: string;
  /** `orgs` (scope `orgs`): the account's memberships, passed on to the upstream. */
  orgs?: Membership[];
  /** `groups` (scope `groups`): the account's teams as `<org>/<team>`, passed on to the upstream. */
  groups?: string[];
  /** `idp` and `idp_name`: the connection a federated sign-in came through (docs/federation.md#tokens). */
  idp?: { id: string; name: string };
  /** Seconds. */
  authTime?: number;
  /** The control plane's session (OIDC Front-Channel Logout §2 `sid`). */
  sid?: string;
}

export interface VerifyIdTokenOptions {
  issuer: string;
  clientId: string;
  keys: JWTVerifyGetKey;
  now: number;
  /** The login's nonce; `null` on refresh, where OIDC Core §12.2 lets the ID token omit it (one given must still be absent or ours: not checked). */
  nonce: string | null;
  /** On refresh: the subject must stay the same (OIDC Core §12.2). */
  subject?: string;
}

/**
 * The assurance and principal type a control-plane token states: `svc.assurance` (`acr` when
 * absent) and `svc.principal.type`; undefined for what is missing or unknown. ID and access
 * tokens carry them alike.
 */
export function readPrincipalClaims(claims: Record<string, unknown>): {
  assurance: AssuranceLevel | undefined;
  principalType: 'human' | 'agent' | undefined;
} {
  const svc = (claims['svc'] ?? {}) as { assurance?: unknown; principal?: { type?: unknown } };
  const type = svc.principal?.type;
  return {
    assurance: isAssuranceLevel(svc.assurance)
      ? svc.assurance
      : isAssuranceLevel(claims['acr'])
        ? claims['acr']
        : undefined,
    principalType: type === 'human' || type === 'agent' ? type : undefined,
  };
}

/** The well-formed entries of an `orgs` claim; anything else is dropped, never passed on. */
function readOrgsClaim(value: unknown[]): Membership[] {
  return value.flatMap((entry) => {
    const { slug, role } = (entry ?? {}) as { slug?: unknown; role?: unknown };
    return typeof slug === 'string' && /^[a-z0-9-]{1,64}$/.test(slug) && ORG_ROLES.includes(role as OrgRole)
      ? [{ slug, role: role as OrgRole }]
      : [];
  });
}

/** The well-formed entries of a `groups` claim (`<org slug>/<team slug>`); anything else is dropped. */
function readGroupsClaim(value: unknown[]): string[] {
  return value.filter((g): g is string => typeof g === 'string' && /^[a-z0-9-]{1,64}\/[a-z0-9-]{1,63}$/.test(g));
}

/** `idp` and `idp_name` when both are short strings; anything else is dropped, never passed on. */
function readIdpClaims(claims: Record<string, unknown>): { idp?: { id: string; name: string } } {
  const id = claims['idp'];
  const name = claims['idp_name'];
  return typeof id === 'string' && /^[\w-]{1,100}$/.test(id) && typeof name === 'string' && name.length <= 200
    ? { idp: { id, name } }
    : {};
}

function invalid(message: string): KeyplaneError {
  return fail('invalid_id_token', message);
}

export async function verifyIdToken(idToken: string, options: VerifyIdTokenOptions): Promise<IdTokenFacts> {
  let claims: Record<string, unknown>;
  let typ: unknown;
  try {
    const verified = await checkJwt(idToken, options.keys, {
      algorithms: ['ES256'],
      issuer: options.issuer,
      audience: options.clientId,
      now: options.now,
      requiredClaims: ['exp', 'iat', 'sub'],
    });
    claims = verified.payload;
    typ = verified.header['typ'];
  } catch (error) {
    // A key set that could not be fetched says nothing about the token: the caller answers 503.
    if (isDependencyUnavailable(error)) throw error;
    throw invalid('the ID token does not verify (signature, issuer, audience or expiry)');
  }
  if (typeof typ === 'string' && typ.toLowerCase().replace(/^application\//, '') === 'at+jwt')
    throw invalid('an access token is not an ID token');
  const aud = claims['aud'];
  if (Array.isArray(aud) && aud.length > 1 && claims['azp'] !== options.clientId)
    throw invalid('the ID token names other audiences without azp');
  if (options.nonce !== null) {
    const nonce = claims['nonce'];
    if (typeof nonce !== 'string' || !constantEquals(nonce, options.nonce))
      throw invalid('the ID token nonce is not the one of this sign-in');
  }
  const sub = claims['sub'] as string;
  if (options.subject !== undefined && sub !== options.subject)
    throw invalid('the refreshed ID token names another subject');
  const { assurance, principalType } = readPrincipalClaims(claims);
  if (!assurance) throw invalid('the ID token states no assurance');
  if (!principalType) throw invalid('the ID token states no principal');
  const email = typeof claims['email'] === 'string' ? claims['email'] : undefined;
  const authTime = typeof claims['auth_time'] === 'number' ? claims['auth_time'] : undefined;
  return {
    sub,
    assurance,
    principalType,
    ...(email !== undefined ? { email, emailVerified: claims['email_verified'] === true } : {}),
    ...(authTime !== undefined ? { authTime } : {}),
    ...(typeof claims['sid'] === 'string' ? { sid: claims['sid'] } : {}),
    ...(typeof claims['preferred_username'] === 'string' ? { username: claims['preferred_username'] } : {}),
    ...(Array.isArray(claims['orgs']) ? { orgs: readOrgsClaim(claims['orgs']) } : {}),
    ...(Array.isArray(claims['groups']) ? { groups: readGroupsClaim(claims['groups']) } : {}),
    ...readIdpClaims(claims),
  };
}
