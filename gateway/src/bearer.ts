import { actorChain } from '#lib/oauth/token-exchange.js';
import { hkdfSync } from 'node:crypto';
import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose';
import { checkJwt } from '#lib/crypto/jwt.js';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { isDpopError } from '#lib/dpop/errors.js';
import { checkDpopNonce, issueDpopNonce } from '#lib/dpop/nonce.js';
import { dpopChallenge } from '#lib/dpop/respond.js';
import { computeAth, dpopReplayKey, verifyDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import type { Caller } from '#lib/gateway-protocol/policy.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import type { ExpiringCache } from '#lib/runtime/expiring-cache.js';
import type { DpopKeyCache } from '#lib/dpop/key-cache.js';
import { readPrincipalClaims } from './id-token.js';

/** jose remote JWKS settings: refetch on an unknown kid at most every 30 s; the timeout is `controlPlaneTimeoutMs`. */
export const JWKS_COOLDOWN_MS = 30_000;
export const JWKS_CACHE_MAX_AGE_MS = 10 * 60_000;
/** How long after its `iat` a DPoP proof is accepted, and its `jti` remembered. */
export const DPOP_MAX_AGE_SECONDS = 60;

export function remoteControlPlaneKeys(controlPlane: string, timeoutMs: number): JWTVerifyGetKey {
  return createRemoteJWKSet(new URL(`${controlPlane}/.well-known/jwks.json`), {
    timeoutDuration: timeoutMs,
    cooldownDuration: JWKS_COOLDOWN_MS,
    cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
  });
}

/**
 * The control plane's keys, with a key set that could not be fetched reported as the control
 * plane being unavailable (503, retry) rather than the token being invalid (401): a token whose
 * key is not cached yet may well be good. A key already cached needs no fetch and keeps working.
 */
export function guardKeys(keys: JWTVerifyGetKey, monitor: DependencyMonitor): JWTVerifyGetKey {
  return async (header, token) => {
    try {
      return await keys(header, token);
    } catch (error) {
      throw monitor.failure('control_plane', error) ?? error;
    }
  };
}

export interface ApiAuthContext {
  /** The control plane's issuer. */
  issuer: string;
  /** The audience access tokens must name: the route's resource, else the gateway's public URL (RFC 8707). */
  audience: string;
  /** Clients whose tokens are accepted: the gateway's own and the policy's `accept_clients`. */
  acceptClients: readonly string[];
  /**
   * An MCP route: any client's token is accepted, but its `aud` must be exactly `audience` (one
   * value), since the resource is all that ties a third-party client's token to this route.
   */
  anyClient?: boolean;
  /** The gateway's public URL, from which `htu` is rebuilt (never from client headers). */
  publicUrl: string;
  keys: JWTVerifyGetKey;
  state: SharedState;
  now: () => number;
  /** With `dpopNonce` on: the nonce keys, newest first (the first issues, all verify). */
  dpopNonceKeys?: readonly Uint8Array[];
  /** Access tokens already verified here, by their exact string, until their `exp`. */
  verifiedTokens?: ExpiringCache<string, VerifiedAccessToken>;
  dpopKeys?: DpopKeyCache;
  /**
   * Whether an exchanged token (one with `act`) is still active at the control plane: it ends with
   * the grant, refresh family, session or agent it came from (docs/security.md#token-exchange),
   * which its signature cannot show. Without it (no client credentials) such tokens are refused.
   */
  exchangedStillActive?: (token: string) => Promise<boolean>;
}

/**
 * The gateway's DPoP nonce keys (RFC 9449 §8), one per cookie key and in the same order:
 * replicas already share the cookie keys, so each accepts the nonces of every other, and a
 * cookie-key rotation rotates these too. HKDF keeps the two uses of one secret apart.
 */
export function deriveDpopNonceKeys(cookieKeys: readonly { key: Uint8Array }[]): Uint8Array[] {
  return cookieKeys.map(
    ({ key }) => new Uint8Array(hkdfSync('sha256', key, new Uint8Array(0), 'keyplane:gateway:dpop-nonce:v1', 32)),
  );
}

/** The nonce to hand a DPoP caller now: the newest key, the gateway's public URL as audience (§9). */
export function currentDpopNonce(keys: readonly Uint8Array[], audience: string, now: number): string {
  return issueDpopNonce({ key: keys[0]!, audience, now });
}

/** `WWW-Authenticate` for a resource refusal, in the scheme the caller used (RFC 6750 §3, RFC 9449 §7.1). */
export function challenge(scheme: 'Bearer' | 'DPoP', realm: string, params: Record<string, string> = {}): string {
  const parts = Object.entries(params).map(([key, value]) => `${key}="${value.replace(/["\\]/g, '')}"`);
  if (scheme === 'DPoP')
    return (
      dpopChallenge({
        ...(params['error'] ? { error: params['error'] } : {}),
        ...(params['error_description'] ? { description: params['error_description'] } : {}),
      }) + (params['acr_values'] ? `, acr_values="${params['acr_values']}"` : '')
    );
  return [`Bearer realm="${realm}"`, ...parts].join(', ');
}

function invalidToken(scheme: 'Bearer' | 'DPoP', realm: string, message: string): KeyplaneError {
  return fail('invalid_token', message, {
    headers: { 'www-authenticate': challenge(scheme, realm, { error: 'invalid_token', error_description: message }) },
    fields: { error: 'invalid_token', error_description: message },
  });
}

/** An access token that verified: its claims, and its hash as a DPoP proof's `ath` states it. */
export interface VerifiedAccessToken {
  claims: Record<string, unknown>;
  ath: string;
}

/**
 * ES256, `typ: at+jwt`, issuer, `exp`. A token that verified once is taken from the cache until
 * its `exp`: its signature cannot change before then, and its ES256 verification was the
 * costliest step of an API request. Audience and client are checked on every request (they
 * depend on the route and the held policy).
 */
async function verifyAccessToken(token: string, context: ApiAuthContext): Promise<VerifiedAccessToken> {
  const now = context.now();
  const known = context.verifiedTokens?.get(token, now);
  if (known) return known;
  const { payload } = await checkJwt(token, context.keys, {
    algorithms: ['ES256'],
    typ: 'at+jwt',
    issuer: context.issuer,
    now,
    requiredClaims: ['exp', 'iat', 'sub'],
  });
  const verified = { claims: payload, ath: computeAth(token) };
  context.verifiedTokens?.set(token, verified, (payload.exp as number) * 1000, now);
  return verified;
}

/** Splits `Authorization` into scheme and token; null when it is not Bearer or DPoP. */
export function parseAuthorization(header: string | undefined): { scheme: 'Bearer' | 'DPoP'; token: string } | null {
  if (!header) return null;
  const match = /^(Bearer|DPoP) ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  if (!match) return null;
  return { scheme: match[1]!.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer', token: match[2]! };
}

/**
 * Verifies an API caller's access token locally (ES256, `iss`, `aud`, `exp`, `typ: at+jwt`) and,
 * for the DPoP scheme, its proof (RFC 9449 §4.3 and §7.1). A DPoP-bound token presented as
 * Bearer is refused (§7.1: the binding would otherwise be stripped by a downgrade).
 */
export async function authenticateApiCaller(
  request: { method: string; path: string; authorization: string; dpop: string | string[] | undefined },
  context: ApiAuthContext,
): Promise<Caller> {
  const parsed = parseAuthorization(request.authorization);
  const realm = context.publicUrl;
  if (!parsed) throw invalidToken('Bearer', realm, 'the Authorization header must be Bearer or DPoP with a token');
  const { claims, ath } = await verifyAccessToken(parsed.token, context).catch((error: unknown) => {
    if (isDependencyUnavailable(error)) throw error;
    throw invalidToken(parsed.scheme, realm, 'the access token is not valid here');
  });
  // RFC 8707 / RFC 9068 §4: a token for another resource (another route's API) is not for this one.
  const aud = claims['aud'];
  const audienceMatches = context.anyClient
    ? aud === context.audience || (Array.isArray(aud) && aud.length === 1 && aud[0] === context.audience)
    : aud === context.audience || (Array.isArray(aud) && aud.includes(context.audience));
  if (!audienceMatches) throw invalidToken(parsed.scheme, realm, 'the access token is for another resource');
  // RFC 9068 §2.2 client_id: a token minted for another client is not the gateway's to accept,
  // whoever its subject is (a client a victim signed in to would otherwise speak for them here).
  if (
    typeof claims['client_id'] !== 'string' ||
    !(context.anyClient === true || context.acceptClients.includes(claims['client_id']))
  )
    throw invalidToken(parsed.scheme, realm, 'the access token was issued to a client this gateway does not accept');
  const jkt = (claims['cnf'] as { jkt?: unknown } | undefined)?.jkt;
  if (parsed.scheme === 'Bearer' && jkt !== undefined)
    throw invalidToken('DPoP', realm, 'this token is DPoP-bound: present it with the DPoP scheme and a proof');
  if (parsed.scheme === 'DPoP') {
    if (typeof jkt !== 'string') throw invalidToken('DPoP', realm, 'the DPoP scheme needs a DPoP-bound token');
    const now = context.now();
    const nonceKeys = context.dpopNonceKeys && context.dpopNonceKeys.length > 0 ? context.dpopNonceKeys : undefined;
    // One audience for everything behind this gateway: it is one resource server (RFC 9449 §9).
    const nonceAudience = context.publicUrl;
    try {
      await verifyDpopProof(request.dpop, {
        htm: request.method,
        htu: `${context.publicUrl}${request.path}`,
        now,
        maxAgeSeconds: DPOP_MAX_AGE_SECONDS,
        accessToken: parsed.token,
        accessTokenHash: ath,
        boundJkt: jkt,
        // Checked before the jti is recorded, so a proof refused for its nonce does not burn its jti.
        ...(nonceKeys
          ? {
              nonce: (value: string) =>
                nonceKeys.some((key) => checkDpopNonce(value, { key, audience: nonceAudience, now })),
            }
          : {}),
        ...(context.dpopKeys ? { keyCache: context.dpopKeys } : {}),
        isReplay: async (jti, proofJkt, expiresAt) =>
          !(await context.state.setIfAbsent(dpopReplayKey(jti, proofJkt), '1', Math.max(1, expiresAt - context.now()))),
      });
    } catch (error) {
      if (!isDpopError(error)) throw error;
      // RFC 9449 §8-§9: every refusal of a proof carries a fresh nonce, so the client's retry can succeed.
      throw fail(error.code, error.message, {
        status: 401,
        headers: {
          'www-authenticate': dpopChallenge({ error: error.code, description: error.message }),
          ...(nonceKeys ? { 'dpop-nonce': currentDpopNonce(nonceKeys, nonceAudience, now) } : {}),
        },
        fields: { error: error.code, error_description: error.message },
      });
    }
  }
  if (claims['act'] !== undefined) {
    const active = context.exchangedStillActive ? await context.exchangedStillActive(parsed.token) : false;
    if (!active) throw invalidToken(parsed.scheme, realm, 'the access token was revoked, or its source was');
  }
  const { assurance, principalType } = readPrincipalClaims(claims);
  if (!principalType || !assurance)
    throw invalidToken(parsed.scheme, realm, 'the access token lacks its principal or assurance');
  const scope = typeof claims['scope'] === 'string' ? claims['scope'] : '';
  // An agent's owner decides `agent_owners_in` (docs/gateway.md#access-rules).
  const owner = (claims['svc'] as { principal?: { owner?: unknown } } | undefined)?.principal?.owner;
  return {
    kind: parsed.scheme === 'DPoP' ? 'dpop' : 'bearer',
    subject: claims['sub'] as string,
    principalType,
    assurance,
    scopes: scope.split(' ').filter(Boolean),
    bucketId: claims['sub'] as string,
    ...(claims['act'] !== undefined ? { actors: actorChain(claims['act']) } : {}),
    ...(principalType === 'agent' && typeof owner === 'string' ? { ownerId: owner } : {}),
  };
}
