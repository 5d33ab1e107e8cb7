import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { isAccountActive } from '../accounts/lifecycle.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';
import { grantIdOfJti, verifyAccessToken, type AccessTokenClaimsRead } from './tokens.js';

export type TokenStatusServices = Pick<ControlPlaneServices, 'config' | 'keys' | 'storage' | 'events' | 'now'>;

type Identified = { kind: 'refresh'; grantId: string } | { kind: 'access'; claims: AccessTokenClaimsRead } | null;

/** What a presented token is: one of our access tokens (a JWT that verifies), a known refresh token, or nothing. */
async function identify(services: TokenStatusServices, token: string): Promise<Identified> {
  if (token.includes('.')) {
    try {
      return { kind: 'access', claims: await verifyAccessToken(services, token) };
    } catch (error) {
      // A revocation check that could not be made says nothing about the token: 503, not inactive.
      if (isDependencyUnavailable(error)) throw error;
      return null;
    }
  }
  const refresh = await services.storage.oidc.findRefreshToken(sha256Hex(token));
  return refresh ? { kind: 'refresh', grantId: refresh.grantId } : null;
}

/**
 * RFC 7009 for an authenticated client: a refresh token revokes its whole family, an access
 * token itself. An unknown token, or one of another client, changes nothing and is no error
 * (RFC 7009 §2.2), so the answer never tells whether a token exists.
 */
export async function revokeToken(
  services: TokenStatusServices,
  client: StoredClient,
  token: string,
): Promise<{ receipt?: string }> {
  const found = await identify(services, token);
  const now = services.now();
  if (!found) return {};
  const { storage, events } = services;
  if (found.kind === 'refresh') {
    const grant = await storage.oidc.getGrant(found.grantId);
    if (!grant || grant.clientId !== client.clientId) return {};
    return storage.transaction(async (tx) => {
      if (!(await tx.oidc.revokeGrant(grant.grantId, now))) return {};
      return events.record(tx, {
        type: 'token.family_revoked',
        at: now,
        outcome: 'success',
        clientId: client.clientId,
        identityId: grant.identityId,
        grantId: grant.grantId,
        cause: 'revocation',
      });
    });
  }
  const { claims } = found;
  if (claims.client_id !== client.clientId) return {};
  return storage.transaction(async (tx) => {
    await tx.oidc.revokeAccessToken(claims.jti, claims.exp * 1000);
    return events.record(tx, {
      type: 'token.access_revoked',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      grantId: grantIdOfJti(claims.jti) ?? '',
    });
  });
}

/** Who may learn about a token: its own client, or a client that registered the token's audience as its resource. */
function mayIntrospect(caller: StoredClient, clientId: string, aud: string[]): boolean {
  return caller.clientId === clientId || aud.some((a) => caller.metadata.resources.includes(a));
}

/** An RFC 7662 §2.2 answer: `{active: false}` alone, or the token's facts. */
export type Introspection = { active: false } | ({ active: true; token_type: string } & Record<string, unknown>);

const INACTIVE = { active: false } as const;

/**
 * RFC 7662 for an authenticated client. Anything the caller may not learn about (another client's
 * token outside its resources), and every used, expired or revoked token or disabled account,
 * reads as inactive, the same answer as an unknown token (RFC 7662 §2.2).
 */
export async function introspectToken(
  services: TokenStatusServices,
  client: StoredClient,
  token: string,
): Promise<Introspection> {
  const found = await identify(services, token);
  if (!found) return INACTIVE;
  const now = services.now();
  if (found.kind === 'access') {
    const { claims } = found;
    const aud = Array.isArray(claims.aud) ? claims.aud : claims.aud ? [claims.aud] : [];
    if (!mayIntrospect(client, claims.client_id, aud)) return INACTIVE;
    return {
      active: true,
      token_type: claims.cnf?.jkt ? 'DPoP' : 'Bearer',
      iss: claims.iss,
      sub: claims.sub,
      aud: claims.aud,
      client_id: claims.client_id,
      scope: claims.scope,
      exp: claims.exp,
      iat: claims.iat,
      jti: claims.jti,
      auth_time: claims.auth_time,
      acr: claims.acr,
      amr: claims.amr,
      svc: claims.svc,
      ...(claims.cnf ? { cnf: claims.cnf } : {}),
      // RFC 8693 §4.1: the actor of an exchanged token, earlier actors nested.
      ...(claims.act ? { act: claims.act } : {}),
    };
  }
  const { storage } = services;
  const refresh = await storage.oidc.findRefreshToken(sha256Hex(token));
  const grant = await storage.oidc.getGrant(found.grantId);
  if (
    !refresh ||
    !grant ||
    grant.revokedAt !== null ||
    refresh.usedAt !== null ||
    refresh.idleExpiresAt <= now ||
    grant.expiresAt <= now
  )
    return INACTIVE;
  if (!(await isAccountActive(storage, grant.identityId))) return INACTIVE;
  if (!mayIntrospect(client, grant.clientId, [])) return INACTIVE;
  return {
    active: true,
    token_type: 'refresh_token',
    iss: services.config.issuer,
    sub: grant.identityId,
    client_id: grant.clientId,
    scope: grant.scope,
    exp: Math.floor(Math.min(refresh.idleExpiresAt, grant.expiresAt) / 1000),
    iat: Math.floor(refresh.createdAt / 1000),
    ...(refresh.dpopJkt ? { cnf: { jkt: refresh.dpopJkt } } : {}),
  };
}

/** Drops used codes, refresh tokens past their idle end and revoked-token markers past their token's end. */
export async function purgeExpiredTokens(services: Pick<TokenStatusServices, 'storage' | 'now'>): Promise<void> {
  await services.storage.oidc.purgeExpired(services.now());
}
