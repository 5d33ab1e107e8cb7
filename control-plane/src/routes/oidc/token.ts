import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { dpopRefusal } from '../../../../lib/dpop/respond.js';
import { isDpopError } from '../../../../lib/dpop/errors.js';
import { checkDpopNonce, issueDpopNonce } from '../../../../lib/dpop/nonce.js';
import { sharedReplayCheck } from '../../../../lib/dpop/replay.js';
import { DPOP_ALGORITHMS, verifyDpopProof, type VerifiedDpopProof } from '../../../../lib/dpop/verify-dpop-proof.js';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { checkCodeExchange } from '../../../../lib/oauth/code-exchange.js';
import { oauthError } from '../../../../lib/oauth/errors.js';
import { checkResource } from '../../../../lib/oauth/resource.js';
import { formatScope, parseScope } from '../../../../lib/oauth/scope.js';
import { RateLimiter } from '../../../../lib/runtime/security/rate-limiter.js';
import { randomId, randomToken } from '../../../../lib/util/random.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import type { StoredClient, StoredGrant } from '../../storage/types.js';
import { errorResponses } from '../../http/schemas.js';
import { authenticateClient } from './client-auth.js';
import { JWT_BEARER, jwtBearerGrant } from '../../oidc/grants/jwt-bearer.js';
import { mintTokens } from './tokens.js';
import { isAccountActive } from '../../accounts/lifecycle.js';

const tokenResponse = {
  type: 'object',
  required: ['ok', 'access_token', 'token_type', 'expires_in'],
  properties: {
    ok: { const: true },
    access_token: { type: 'string', description: 'RFC 9068 JWT (ES256, typ at+jwt)' },
    token_type: { enum: ['Bearer', 'DPoP'] },
    expires_in: { type: 'integer' },
    scope: { type: 'string' },
    id_token: { type: 'string' },
    refresh_token: { type: 'string', description: 'Rotates on every use; only with offline_access and the refresh_token grant registered.' },
    receipt: { type: 'string' },
  },
  additionalProperties: true,
} as const;

/** One form or JSON body, values as strings (a repeated parameter is refused, RFC 6749 §3.2). */
export function readBody(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw oauthError('invalid_request', 'send the parameters as a form or a JSON object');
  for (const [name, value] of Object.entries(body)) {
    if (Array.isArray(value) && name !== 'resource') throw oauthError('invalid_request', `${name} must not be repeated`);
  }
  return body as Record<string, unknown>;
}

function str(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096) throw oauthError('invalid_request', `${name} must be a non-empty string`);
  return value;
}

function noStore(reply: FastifyReply): void {
  reply.header('cache-control', 'no-store');
  reply.header('pragma', 'no-cache');
}

/**
 * Checks the DPoP header of a request to `path` (RFC 9449 §4.3); null when none was sent. With
 * `oidc.dpopNonce` on, proofs must carry a current server nonce for this endpoint (§8, §9): a
 * stateless HMAC nonce under a key derived from the master key, so every replica agrees; a fresh
 * one goes out in `DPoP-Nonce` on every answer to a DPoP request.
 */
export async function checkDpopHeader(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, path: string, at: 'token' | 'resource', extra: { accessToken?: string; boundJkt?: string } = {}): Promise<VerifiedDpopProof | null> {
  const header = request.headers.dpop;
  if (header === undefined) return null;
  const now = app.kp.now();
  const audience = `${app.kp.config.issuer}${path}`;
  const nonces = app.kp.config.oidc.dpopNonce ? { key: app.kp.secrets.macKey('dpop-nonce'), audience } : null;
  const fresh = nonces ? issueDpopNonce({ ...nonces, now }) : undefined;
  if (fresh !== undefined) reply.header('dpop-nonce', fresh);
  try {
    return await verifyDpopProof(header, {
      htm: request.method,
      // Rebuilt from the configured issuer, never from Host or X-Forwarded-* (RFC 9449 §4.3 check 9).
      htu: audience,
      now,
      isReplay: sharedReplayCheck(app.kp.state, app.kp.now),
      ...(nonces ? { nonce: (value: string) => checkDpopNonce(value, { ...nonces, now }) } : {}),
      ...extra,
    });
  } catch (error) {
    if (isDpopError(error)) throw dpopRefusal(error, at, fresh);
    throw error;
  }
}

/**
 * `POST /auth/token` (RFC 6749 §3.2): authenticate the client, check the grant type, check DPoP,
 * then the grant: `authorization_code` (one-time, 60 s, bound to client, redirect URI and PKCE
 * verifier) or `refresh_token` (rotating, family revoked on reuse).
 */
export default async function tokenRoutes(app: FastifyInstance): Promise<void> {
  const { storage, events, config } = app.kp;
  const limiter = new RateLimiter(app.kp.state);

  async function limit(bucket: 'token:ip' | 'token:client', subject: string, max: number): Promise<void> {
    const decision = await limiter.hit(bucket, subject, { max, windowMs: 60_000 });
    if (!decision.allowed) {
      const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      throw fail('rate_limited', `too many token requests; try again in ${seconds} s`, { headers: { 'retry-after': String(seconds) }, fields: { error: 'slow_down', error_description: 'too many token requests' } });
    }
  }

  /** Revokes a grant (its whole family) with a receipt. */
  async function revokeFamily(grant: StoredGrant, cause: 'code_replay' | 'refresh_reuse' | 'session_ended'): Promise<void> {
    const now = app.kp.now();
    await storage.transaction(async (tx) => {
      if (!(await tx.oidc.revokeGrant(grant.grantId, now))) return;
      await events.record(tx, { type: 'token.family_revoked', at: now, outcome: 'success', clientId: grant.clientId, identityId: grant.identityId, grantId: grant.grantId, cause });
    });
  }

  /** RFC 8707 at the token endpoint: a resource must be registered, and within what the grant allowed. */
  function resourceFor(client: StoredClient, body: Record<string, unknown>, granted: string | null): string | null {
    const requested = checkResource(client.metadata.resources, body.resource);
    if (requested === undefined) return granted;
    if (granted !== null && requested !== granted) throw oauthError('invalid_target', 'the resource differs from the one authorized');
    return requested;
  }

  function checkDpopRequirement(client: StoredClient, proof: VerifiedDpopProof | null): void {
    if (client.metadata.dpop_bound_access_tokens && !proof) {
      throw oauthError('invalid_dpop_proof', 'this client is registered for DPoP-bound tokens: send a DPoP proof', { status: 400 });
    }
  }

  async function authorizationCodeGrant(client: StoredClient, body: Record<string, unknown>, proof: VerifiedDpopProof | null) {
    const code = str(body, 'code');
    const redirectUri = str(body, 'redirect_uri');
    const verifier = str(body, 'code_verifier');
    if (!code) throw oauthError('invalid_request', 'code is required');
    if (!redirectUri) throw oauthError('invalid_request', 'redirect_uri is required');
    if (!verifier) throw oauthError('invalid_request', 'code_verifier is required (PKCE)');
    const now = app.kp.now();
    const consumed = await storage.oidc.consumeCode(sha256Hex(code), now);
    if (consumed.status === 'unknown') throw oauthError('invalid_grant', 'the authorization code is unknown');
    if (consumed.status === 'replayed') {
      // RFC 6749 §4.1.2 / RFC 9700 §4.5: a second use revokes everything issued from the code.
      const grant = consumed.code.grantId ? await storage.oidc.getGrant(consumed.code.grantId) : null;
      if (grant) await revokeFamily(grant, 'code_replay');
      throw oauthError('invalid_grant', 'the authorization code was used already; tokens issued from it are revoked');
    }
    const stored = consumed.code;
    if (!(await isAccountActive(storage, stored.identityId))) throw oauthError('invalid_grant', 'the account is disabled or deleted');
    checkCodeExchange(stored, {
      clientId: client.clientId, redirectUri, verifier, proofJkt: proof?.jkt ?? null, now,
      sessionLive: await storage.sessions.isLive(stored.sessionId, now),
    });
    const resource = resourceFor(client, body, stored.resource);
    const scopes = parseScope(stored.scope);
    const withRefresh = scopes.includes('offline_access') && client.metadata.grant_types.includes('refresh_token');
    const grant: StoredGrant = {
      grantId: randomId('gr'),
      clientId: client.clientId,
      identityId: stored.identityId,
      sessionId: stored.sessionId,
      scope: stored.scope,
      resource: stored.resource,
      assurance: stored.assurance,
      amr: stored.amr,
      authTime: stored.authTime,
      createdAt: now,
      expiresAt: now + config.lifetimes.refreshTokenAbsolute * 1000,
      revokedAt: null,
      offline: stored.offline,
    };
    const minted = await mintTokens(app, { grant, scopes, resource, dpopJkt: proof?.jkt ?? null, nonce: stored.nonce, idToken: scopes.includes('openid') });
    const refreshToken = withRefresh ? randomToken(32) : undefined;
    const { receipt } = await storage.transaction(async (tx) => {
      await tx.oidc.insertGrant(grant);
      await tx.oidc.setCodeGrant(stored.codeHash, grant.grantId);
      if (refreshToken) {
        await tx.oidc.insertRefreshToken({
          tokenHash: sha256Hex(refreshToken), grantId: grant.grantId,
          // RFC 9449 §5: refresh tokens of public clients are bound to the DPoP key.
          dpopJkt: client.type === 'public' && proof ? proof.jkt : null,
          createdAt: now, idleExpiresAt: Math.min(grant.expiresAt, now + config.lifetimes.refreshTokenIdle * 1000), usedAt: null,
        });
      }
      return events.record(tx, {
        type: 'token.issued', at: now, outcome: 'success', clientId: client.clientId, identityId: grant.identityId,
        grantId: grant.grantId, dpop: proof !== null, refresh: refreshToken !== undefined, resource,
      });
    });
    return { minted, scopes, refreshToken, receipt, proof };
  }

  async function refreshTokenGrant(client: StoredClient, body: Record<string, unknown>, proof: VerifiedDpopProof | null) {
    const presented = str(body, 'refresh_token');
    if (!presented) throw oauthError('invalid_request', 'refresh_token is required');
    const now = app.kp.now();
    const hash = sha256Hex(presented);
    const found = await storage.oidc.findRefreshToken(hash);
    if (!found) throw oauthError('invalid_grant', 'the refresh token is unknown');
    const grant = await storage.oidc.getGrant(found.grantId);
    if (!grant || grant.clientId !== client.clientId) throw oauthError('invalid_grant', 'the refresh token was issued to another client');
    // Checked before the token is used up, so someone without the key cannot burn it.
    if (found.dpopJkt !== null && (!proof || proof.jkt !== found.dpopJkt)) {
      throw oauthError('invalid_grant', 'the refresh token is bound to a DPoP key: send a proof made with that key');
    }
    if (grant.revokedAt !== null) throw oauthError('invalid_grant', 'the refresh token was revoked');
    if (!(await isAccountActive(storage, grant.identityId))) throw oauthError('invalid_grant', 'the account is disabled or deleted');
    // Also before it is used up: a request the grant does not allow leaves the token working.
    const granted = parseScope(grant.scope);
    const requested = body.scope === undefined ? granted : parseScope(body.scope);
    const extra = requested.find((scope) => !granted.includes(scope));
    if (extra !== undefined) throw oauthError('invalid_scope', `scope ${extra.slice(0, 60)} was not granted`);
    if (!granted.includes('offline_access') || !client.metadata.grant_types.includes('refresh_token')) throw oauthError('invalid_grant', 'the grant does not allow refresh');
    const resource = resourceFor(client, body, grant.resource);
    // A grant ends with the session that started it, unless the user approved offline access.
    const sessionLive = grant.offline || (await storage.sessions.isLive(grant.sessionId, now));
    if (!sessionLive) {
      await revokeFamily(grant, 'session_ended');
      throw oauthError('invalid_grant', 'the sign-in that started this grant has ended');
    }
    const consumed = await storage.oidc.consumeRefreshToken(hash, now);
    if (consumed.status !== 'consumed') {
      // RFC 9700 §4.14.2: a rotated-out token came back, so one of its holders is not the client.
      await revokeFamily(grant, 'refresh_reuse');
      throw oauthError('invalid_grant', 'the refresh token was used already; its whole family is revoked');
    }
    if (found.idleExpiresAt <= now || grant.expiresAt <= now) throw oauthError('invalid_grant', 'the refresh token has expired');
    const minted = await mintTokens(app, { grant, scopes: requested, resource, dpopJkt: proof?.jkt ?? null, nonce: null, idToken: requested.includes('openid') });
    const refreshToken = randomToken(32);
    const { receipt } = await storage.transaction(async (tx) => {
      // Use at the app is use of the sign-in: the session's idle limit moves on (never its absolute one).
      if (!grant.offline) await tx.sessions.touch(grant.sessionId, now, now + config.lifetimes.sessionIdle * 1000);
      await tx.oidc.insertRefreshToken({
        tokenHash: sha256Hex(refreshToken), grantId: grant.grantId, dpopJkt: found.dpopJkt,
        createdAt: now, idleExpiresAt: Math.min(grant.expiresAt, now + config.lifetimes.refreshTokenIdle * 1000), usedAt: null,
      });
      return events.record(tx, { type: 'token.refreshed', at: now, outcome: 'success', clientId: client.clientId, identityId: grant.identityId, grantId: grant.grantId, dpop: proof !== null });
    });
    return { minted, scopes: requested, refreshToken, receipt, proof };
  }

  app.post('/auth/token', {
    config: {
      discovery: {
        endpoint: 'token_endpoint',
        metadata: {
          grant_types_supported: ['authorization_code', 'refresh_token', JWT_BEARER],
          token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
          token_endpoint_auth_signing_alg_values_supported: ['ES256', 'EdDSA', 'PS256', 'RS256'],
          dpop_signing_alg_values_supported: [...DPOP_ALGORITHMS],
        },
      },
    },
    schema: {
      tags: ['oidc'],
      summary: 'OIDC token endpoint: authorization_code (PKCE) and refresh_token grants; DPoP-bound tokens with a DPoP header; errors carry error/error_description too',
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: { type: 'object', additionalProperties: true },
      response: { 200: tokenResponse, ...errorResponses },
    },
  }, async (request, reply) => {
    noStore(reply);
    const body = readBody(request);
    // Per address before authentication; per client only once the client is proven, so that
    // nobody can use up another client's budget by naming it.
    await limit('token:ip', request.ip, config.limits.authPerIpPerMinute);
    const client = await authenticateClient(app, request, body);
    await limit('token:client', client.clientId, config.limits.authPerIpPerMinute * 10);
    const grantType = str(body, 'grant_type');
    if (!grantType) throw oauthError('invalid_request', 'grant_type is required');
    if (grantType === JWT_BEARER) {
      // Agents (RFC 7523 §2.1): admitted by the client's access declaration, not its grant_types.
      if (!client.metadata.access.agents) throw oauthError('unauthorized_client', 'this client does not admit agents');
      const issued = await jwtBearerGrant(app.kp, client, body, await checkDpopHeader(app, request, reply, '/auth/token', 'token'));
      return { ok: true, access_token: issued.accessToken, token_type: 'DPoP', expires_in: issued.expiresIn, scope: issued.scope, ...(issued.receipt ? { receipt: issued.receipt } : {}) };
    }
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') throw oauthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    if (!client.metadata.grant_types.includes(grantType)) throw oauthError('unauthorized_client', `this client is not registered for ${grantType}`);
    const proof = await checkDpopHeader(app, request, reply, '/auth/token', 'token');
    checkDpopRequirement(client, proof);
    const result = grantType === 'authorization_code' ? await authorizationCodeGrant(client, body, proof) : await refreshTokenGrant(client, body, proof);
    return {
      ok: true,
      access_token: result.minted.accessToken,
      token_type: result.proof ? 'DPoP' : 'Bearer',
      expires_in: result.minted.expiresIn,
      scope: formatScope(result.scopes),
      ...(result.minted.idToken ? { id_token: result.minted.idToken } : {}),
      ...(result.refreshToken ? { refresh_token: result.refreshToken } : {}),
      ...(result.receipt ? { receipt: result.receipt } : {}),
    };
  });
}
