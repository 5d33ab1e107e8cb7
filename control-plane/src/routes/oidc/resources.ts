import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { dpopChallenge } from '../../../../lib/dpop/respond.js';
import { fail, isKeyplaneError, type KeyplaneError } from '../../../../lib/errors/keyplane-error.js';
import { checkTokenScheme, readAccessToken } from '../../../../lib/oauth/access-token-header.js';
import { oauthError, oauthFields } from '../../../../lib/oauth/errors.js';
import { parseScope } from '../../../../lib/oauth/scope.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import type { StoredClient } from '../../storage/types.js';
import { isAccountActive } from '../../accounts/lifecycle.js';
import { anyObject, errorResponses } from '../schemas.js';
import { authenticateClient } from './client-auth.js';
import { checkDpopHeader } from '../../oidc/dpop-header.js';
import { readTokenRequestBody } from '../../oidc/token-request.js';
import { grantIdOfJti, userClaims, verifyAccessToken, type AccessTokenClaimsRead } from '../../oidc/tokens.js';

const USERINFO_PATH = '/auth/userinfo';

/** RFC 6750 §3 and RFC 9449 §7.1: both schemes are offered, each with its own challenge. */
function challenge(error?: { code: string; description: string }): string {
  const suffix = error ? `, error="${error.code}", error_description="${error.description.replace(/["\\]/g, '')}"` : '';
  return `Bearer realm="keyplane"${suffix}, ${dpopChallenge(error ? { error: error.code, description: error.description } : {})}`;
}

function resourceRefusal(reason: 'invalid_token' | 'unauthorized' | 'insufficient_scope', description: string): KeyplaneError {
  if (reason === 'unauthorized') return fail('unauthorized', description, { status: 401, headers: { 'www-authenticate': challenge() } });
  const status = reason === 'insufficient_scope' ? 403 : 401;
  return fail(reason, description, { status, headers: { 'www-authenticate': challenge({ code: reason, description }) }, fields: oauthFields(reason, description) });
}

/**
 * Authenticates a protected-resource request to this server: Bearer or DPoP (RFC 6750, RFC 9449
 * §7), with the token bound to the proof key and a DPoP-bound token under `Bearer` refused.
 */
async function authenticateResource(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, path: string): Promise<AccessTokenClaimsRead> {
  const presented = readAccessToken(request.headers.authorization);
  if (!presented) throw resourceRefusal('unauthorized', 'send an access token as Authorization: Bearer or DPoP');
  let claims: AccessTokenClaimsRead;
  try {
    claims = await verifyAccessToken(app.kp, presented.token);
  } catch (error) {
    if (isKeyplaneError(error)) throw resourceRefusal('invalid_token', error.message);
    throw error;
  }
  const bound = typeof claims.cnf?.jkt === 'string' ? claims.cnf.jkt : undefined;
  const problem = checkTokenScheme(presented.scheme, bound);
  if (problem === 'bearer_for_bound_token') throw resourceRefusal('invalid_token', 'this access token is DPoP-bound: present it with Authorization: DPoP and a proof');
  if (problem === 'dpop_for_unbound_token') throw resourceRefusal('invalid_token', 'this access token is not DPoP-bound: present it as Bearer');
  if (bound !== undefined) {
    const proof = await checkDpopHeader(app.kp, request, reply, path, 'resource', { accessToken: presented.token, boundJkt: bound });
    if (!proof) throw resourceRefusal('invalid_token', 'a DPoP proof is required with this access token');
  }
  return claims;
}

/** Userinfo (OIDC Core §5.3), token revocation (RFC 7009) and introspection (RFC 7662). */
export default async function oidcResourceRoutes(app: FastifyInstance): Promise<void> {
  const { storage, events, config } = app.kp;

  async function userinfo(request: FastifyRequest, reply: FastifyReply) {
    const claims = await authenticateResource(app, request, reply, USERINFO_PATH);
    // The userinfo endpoint is a resource of the issuer: tokens for other resources are refused.
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(claims.client_id) && !aud.includes(config.issuer)) throw resourceRefusal('invalid_token', 'this access token is for another resource');
    const scopes = parseScope(claims.scope);
    if (!scopes.includes('openid')) throw resourceRefusal('insufficient_scope', 'userinfo needs the openid scope');
    const facts = await userClaims(app.kp, claims.sub);
    return {
      ok: true,
      sub: claims.sub,
      ...(scopes.includes('email') && facts.email ? { email: facts.email.address, email_verified: facts.email.verified === true } : {}),
      ...(scopes.includes('profile') && facts.profile ? facts.profile : {}),
    };
  }

  const userinfoSchema = {
    tags: ['oidc'], summary: 'OIDC userinfo for the access token (Bearer or DPoP)', security: [{ bearerAuth: [] }],
    response: { 200: anyObject, ...errorResponses },
  };
  app.get(USERINFO_PATH, { config: { discovery: { endpoint: 'userinfo_endpoint' } }, schema: userinfoSchema }, async (request, reply) => userinfo(request, reply));
  app.post(USERINFO_PATH, { schema: userinfoSchema }, async (request, reply) => userinfo(request, reply));

  /** Finds what a presented token is, for revocation and introspection. */
  async function identify(token: string): Promise<{ kind: 'refresh'; grantId: string } | { kind: 'access'; claims: AccessTokenClaimsRead } | null> {
    if (token.includes('.')) {
      try {
        return { kind: 'access', claims: await verifyAccessToken(app.kp, token) };
      } catch {
        return null;
      }
    }
    const refresh = await storage.oidc.findRefreshToken(sha256Hex(token));
    return refresh ? { kind: 'refresh', grantId: refresh.grantId } : null;
  }

  app.post('/auth/revoke', {
    config: { discovery: { endpoint: 'revocation_endpoint', metadata: { revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'] } } },
    schema: {
      tags: ['oidc'], summary: 'Token revocation (RFC 7009): a refresh token revokes its whole family; an access token itself',
      consumes: ['application/x-www-form-urlencoded', 'application/json'], body: { type: 'object', additionalProperties: true },
      response: { 200: { type: 'object', required: ['ok'], properties: { ok: { const: true }, receipt: { type: 'string' } } }, ...errorResponses },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const body = readTokenRequestBody(request.body);
    const client = await authenticateClient(app, request, body);
    const token = body.token;
    if (typeof token !== 'string' || token.length === 0 || token.length > 8192) throw oauthError('invalid_request', 'token is required');
    const found = await identify(token);
    const now = app.kp.now();
    // RFC 7009 §2.2: an unknown token, or one of another client, is answered with 200 and changes nothing.
    if (!found) return { ok: true };
    if (found.kind === 'refresh') {
      const grant = await storage.oidc.getGrant(found.grantId);
      if (!grant || grant.clientId !== client.clientId) return { ok: true };
      const { receipt } = await storage.transaction(async (tx) => {
        if (!(await tx.oidc.revokeGrant(grant.grantId, now))) return {};
        return events.record(tx, { type: 'token.family_revoked', at: now, outcome: 'success', clientId: client.clientId, identityId: grant.identityId, grantId: grant.grantId, cause: 'revocation' });
      });
      return receipt ? { ok: true, receipt } : { ok: true };
    }
    const { claims } = found;
    if (claims.client_id !== client.clientId) return { ok: true };
    const { receipt } = await storage.transaction(async (tx) => {
      await tx.oidc.revokeAccessToken(claims.jti, claims.exp * 1000);
      return events.record(tx, { type: 'token.access_revoked', at: now, outcome: 'success', clientId: client.clientId, grantId: grantIdOfJti(claims.jti) ?? '' });
    });
    return receipt ? { ok: true, receipt } : { ok: true };
  });

  /** Who may learn about a token: its own client, or a client that registered the token's audience as its resource. */
  function mayIntrospect(caller: StoredClient, clientId: string, aud: string[]): boolean {
    return caller.clientId === clientId || aud.some((a) => caller.metadata.resources.includes(a));
  }

  app.post('/auth/introspect', {
    config: { discovery: { endpoint: 'introspection_endpoint', metadata: { introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'private_key_jwt'] } } },
    schema: {
      tags: ['oidc'], summary: 'Token introspection for resource servers (RFC 7662); confidential clients only',
      consumes: ['application/x-www-form-urlencoded', 'application/json'], body: { type: 'object', additionalProperties: true },
      response: { 200: anyObject, ...errorResponses },
    },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const body = readTokenRequestBody(request.body);
    const client = await authenticateClient(app, request, body);
    if (client.type !== 'confidential') throw oauthError('unauthorized_client', 'introspection needs an authenticated confidential client');
    const token = body.token;
    if (typeof token !== 'string' || token.length === 0 || token.length > 8192) throw oauthError('invalid_request', 'token is required');
    const found = await identify(token);
    const inactive = { ok: true, active: false };
    if (!found) return inactive;
    const now = app.kp.now();
    if (found.kind === 'access') {
      const { claims } = found;
      const aud = Array.isArray(claims.aud) ? claims.aud : claims.aud ? [claims.aud] : [];
      if (!mayIntrospect(client, claims.client_id, aud)) return inactive;
      return {
        ok: true, active: true, token_type: claims.cnf?.jkt ? 'DPoP' : 'Bearer',
        iss: claims.iss, sub: claims.sub, aud: claims.aud, client_id: claims.client_id, scope: claims.scope,
        exp: claims.exp, iat: claims.iat, jti: claims.jti, auth_time: claims.auth_time, acr: claims.acr, amr: claims.amr, svc: claims.svc,
        ...(claims.cnf ? { cnf: claims.cnf } : {}),
      };
    }
    const refresh = await storage.oidc.findRefreshToken(sha256Hex(token));
    const grant = await storage.oidc.getGrant(found.grantId);
    if (!refresh || !grant || grant.revokedAt !== null || refresh.usedAt !== null || refresh.idleExpiresAt <= now || grant.expiresAt <= now) return inactive;
    if (!(await isAccountActive(storage, grant.identityId))) return inactive;
    if (!mayIntrospect(client, grant.clientId, [])) return inactive;
    return {
      ok: true, active: true, token_type: 'refresh_token', iss: config.issuer, sub: grant.identityId, client_id: grant.clientId, scope: grant.scope,
      exp: Math.floor(Math.min(refresh.idleExpiresAt, grant.expiresAt) / 1000), iat: Math.floor(refresh.createdAt / 1000),
      ...(refresh.dpopJkt ? { cnf: { jkt: refresh.dpopJkt } } : {}),
    };
  });

}
