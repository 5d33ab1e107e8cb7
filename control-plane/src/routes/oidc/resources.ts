import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { dpopChallenge } from '#lib/dpop/respond.js';
import { fail, isKeyplaneError, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { checkTokenScheme, readAccessToken, readBodyAccessToken } from '#lib/oauth/access-token-header.js';
import { signUserinfoResponse } from '#lib/tokens/sign-token.js';
import { findClient } from '../../clients/find-client.js';
import { oauthError, oauthFields } from '#lib/oauth/errors.js';
import { parseScope } from '#lib/oauth/scope.js';
import { anyObject, errorResponses } from '../../http/schemas.js';
import { authenticateClient } from '../../clients/authenticate-client.js';
import { checkDpopHeader } from '../../oidc/dpop-header.js';
import { readTokenRequestBody } from '../../oidc/token-request.js';
import { introspectToken, revokeToken } from '../../oidc/revoke-introspect.js';
import { userClaims, verifyAccessToken, type AccessTokenClaimsRead } from '../../oidc/tokens.js';

const USERINFO_PATH = '/auth/userinfo';

/** RFC 6750 §3 and RFC 9449 §7.1: both schemes are offered, each with its own challenge. */
function challenge(error?: { code: string; description: string }): string {
  const suffix = error ? `, error="${error.code}", error_description="${error.description.replace(/["\\]/g, '')}"` : '';
  return `Bearer realm="keyplane"${suffix}, ${dpopChallenge(error ? { error: error.code, description: error.description } : {})}`;
}

function resourceRefusal(
  reason: 'invalid_token' | 'unauthorized' | 'insufficient_scope' | 'invalid_request',
  description: string,
): KeyplaneError {
  if (reason === 'unauthorized')
    return fail('unauthorized', description, { status: 401, headers: { 'www-authenticate': challenge() } });
  // RFC 6750 §3.1: invalid_request is 400, insufficient_scope 403, invalid_token 401.
  const status = reason === 'insufficient_scope' ? 403 : reason === 'invalid_request' ? 400 : 401;
  return fail(reason, description, {
    status,
    headers: { 'www-authenticate': challenge({ code: reason, description }) },
    fields: oauthFields(reason, description),
  });
}

/**
 * The access token of the request: in the Authorization header (Bearer or DPoP), or as a Bearer
 * token in a form-encoded POST body (RFC 6750 §2.2). RFC 6750 §2: one method only.
 */
function presentedToken(request: FastifyRequest): { scheme: 'Bearer' | 'DPoP'; token: string } {
  const inBody = readBodyAccessToken(request.method, request.headers['content-type'], request.body);
  if (inBody !== undefined && request.headers.authorization !== undefined)
    throw resourceRefusal('invalid_request', 'send the access token in the Authorization header or the body, not both');
  if (inBody === null) throw resourceRefusal('invalid_request', 'access_token must be one access token');
  if (inBody !== undefined) return { scheme: 'Bearer', token: inBody };
  const presented = readAccessToken(request.headers.authorization);
  if (!presented)
    throw resourceRefusal(
      'unauthorized',
      'send an access token as Authorization: Bearer or DPoP, or as access_token in a form POST',
    );
  return presented;
}

/**
 * Authenticates a protected-resource request to this server: Bearer or DPoP (RFC 6750, RFC 9449
 * §7), with the token bound to the proof key and a DPoP-bound token under `Bearer` refused.
 */
async function authenticateResource(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
): Promise<AccessTokenClaimsRead> {
  const presented = presentedToken(request);
  let claims: AccessTokenClaimsRead;
  try {
    claims = await verifyAccessToken(app.kp, presented.token);
  } catch (error) {
    if (isKeyplaneError(error)) throw resourceRefusal('invalid_token', error.message);
    throw error;
  }
  const bound = typeof claims.cnf?.jkt === 'string' ? claims.cnf.jkt : undefined;
  const problem = checkTokenScheme(presented.scheme, bound);
  if (problem === 'bearer_for_bound_token')
    throw resourceRefusal(
      'invalid_token',
      'this access token is DPoP-bound: present it with Authorization: DPoP and a proof',
    );
  if (problem === 'dpop_for_unbound_token')
    throw resourceRefusal('invalid_token', 'this access token is not DPoP-bound: present it as Bearer');
  if (bound !== undefined) {
    const proof = await checkDpopHeader(app.kp, request, reply, path, 'resource', {
      accessToken: presented.token,
      boundJkt: bound,
    });
    if (!proof) throw resourceRefusal('invalid_token', 'a DPoP proof is required with this access token');
  }
  return claims;
}

/** Userinfo (OIDC Core §5.3), token revocation (RFC 7009) and introspection (RFC 7662). */
export default async function oidcResourceRoutes(app: FastifyInstance): Promise<void> {
  const { config } = app.kp;

  async function userinfo(request: FastifyRequest, reply: FastifyReply) {
    const claims = await authenticateResource(app, request, reply, USERINFO_PATH);
    // The userinfo endpoint is a resource of the issuer: tokens for other resources are refused.
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(claims.client_id) && !aud.includes(config.issuer))
      throw resourceRefusal('invalid_token', 'this access token is for another resource');
    const scopes = parseScope(claims.scope);
    if (!scopes.includes('openid')) throw resourceRefusal('insufficient_scope', 'userinfo needs the openid scope');
    const [facts, client] = await Promise.all([
      userClaims(app.kp, claims.sub, scopes),
      findClient(app.kp, claims.client_id),
    ]);
    const stated = {
      sub: claims.sub,
      ...(scopes.includes('email') && facts.email
        ? { email: facts.email.address, email_verified: facts.email.verified === true }
        : {}),
      ...(scopes.includes('profile') && facts.profile ? facts.profile : {}),
      ...(scopes.includes('orgs') && facts.orgs ? { orgs: facts.orgs } : {}),
      ...(scopes.includes('groups') && facts.groups ? { groups: facts.groups } : {}),
      // A federated sign-in's connection rides in the access token (docs/federation.md#tokens).
      ...(typeof claims.idp === 'string' ? { idp: claims.idp, idp_name: claims.idp_name } : {}),
    };
    if (client?.metadata.userinfo_signed_response_alg === 'ES256') {
      // OIDC Core §5.3.2: a signed response carries iss and aud (the client).
      reply.type('application/jwt');
      return signUserinfoResponse(
        { ...stated, iss: config.issuer, aud: claims.client_id, iat: Math.floor(app.kp.now() / 1000) },
        app.kp.keys.current(),
      );
    }
    return stated;
  }

  const userinfoSchema = {
    tags: ['oidc'],
    summary:
      'OIDC userinfo for the access token (Bearer or DPoP; Bearer also as access_token in a form POST); a signed JWT for clients registered with userinfo_signed_response_alg',
    security: [{ bearerAuth: [] }],
    response: { 200: anyObject, ...errorResponses },
  };
  app.get(
    USERINFO_PATH,
    {
      config: {
        discovery: { endpoint: 'userinfo_endpoint', metadata: { userinfo_signing_alg_values_supported: ['ES256'] } },
      },
      schema: userinfoSchema,
    },
    async (request, reply) => userinfo(request, reply),
  );
  app.post(USERINFO_PATH, { schema: userinfoSchema }, async (request, reply) => userinfo(request, reply));

  app.post(
    '/auth/revoke',
    {
      config: {
        discovery: {
          endpoint: 'revocation_endpoint',
          metadata: {
            revocation_endpoint_auth_methods_supported: [
              'client_secret_basic',
              'client_secret_post',
              'private_key_jwt',
              'none',
            ],
          },
        },
      },
      schema: {
        tags: ['oidc'],
        summary: 'Token revocation (RFC 7009): a refresh token revokes its whole family; an access token itself',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: { type: 'object', additionalProperties: true },
        response: {
          // RFC 7009 §2.2: the body is not specified and clients ignore it; only the receipt is in it.
          200: { type: 'object', properties: { receipt: { type: 'string' } } },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const body = readTokenRequestBody(request.body);
      const client = await authenticateClient(app.kp, request.headers.authorization, body);
      const token = body.token;
      if (typeof token !== 'string' || token.length === 0 || token.length > 8192)
        throw oauthError('invalid_request', 'token is required');
      const { receipt } = await revokeToken(app.kp, client, token);
      return receipt ? { receipt } : {};
    },
  );

  app.post(
    '/auth/introspect',
    {
      config: {
        discovery: {
          endpoint: 'introspection_endpoint',
          metadata: {
            introspection_endpoint_auth_methods_supported: [
              'client_secret_basic',
              'client_secret_post',
              'private_key_jwt',
            ],
          },
        },
      },
      schema: {
        tags: ['oidc'],
        summary: 'Token introspection for resource servers (RFC 7662); confidential clients only',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: { type: 'object', additionalProperties: true },
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const body = readTokenRequestBody(request.body);
      const client = await authenticateClient(app.kp, request.headers.authorization, body);
      if (client.type !== 'confidential')
        throw oauthError('unauthorized_client', 'introspection needs an authenticated confidential client');
      const token = body.token;
      if (typeof token !== 'string' || token.length === 0 || token.length > 8192)
        throw oauthError('invalid_request', 'token is required');
      return introspectToken(app.kp, client, token);
    },
  );
}
