import type { FastifyInstance, FastifyReply } from 'fastify';
import { DPOP_ALGORITHMS, type VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { enforceLimit, retryAfterSeconds } from '#lib/errors/rate-limited.js';
import { oauthError } from '#lib/oauth/errors.js';
import { formatScope } from '#lib/oauth/scope.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import { checkDpopHeader } from '../../oidc/dpop-header.js';
import { authorizationCodeGrant } from '../../oidc/grants/authorization-code.js';
import { JWT_BEARER, jwtBearerGrant } from '../../oidc/grants/jwt-bearer.js';
import { refreshTokenGrant } from '../../oidc/grants/refresh-token.js';
import { deviceCodeGrant } from '../../oidc/grants/device-code.js';
import { DEVICE_CODE_GRANT } from '#lib/oauth/device-code.js';
import { ACCESS_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT } from '#lib/oauth/token-exchange.js';
import { tokenExchangeGrant } from '../../oidc/grants/token-exchange.js';
import { readTokenRequestBody, stringParam } from '../../oidc/token-request.js';
import type { StoredClient } from '../../storage/types.js';
import { errorResponses } from '../../http/schemas.js';
import { authenticateClient } from '../../clients/authenticate-client.js';

const tokenResponse = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in'],
  properties: {
    access_token: { type: 'string', description: 'RFC 9068 JWT (ES256, typ at+jwt)' },
    token_type: { enum: ['Bearer', 'DPoP'] },
    expires_in: { type: 'integer' },
    scope: { type: 'string' },
    id_token: { type: 'string' },
    refresh_token: {
      type: 'string',
      description: 'Rotates on every use; only with offline_access and the refresh_token grant registered.',
    },
    receipt: { type: 'string' },
  },
  additionalProperties: true,
} as const;

function noStore(reply: FastifyReply): void {
  reply.header('cache-control', 'no-store');
  reply.header('pragma', 'no-cache');
}

/**
 * `POST /auth/token` (RFC 6749 §3.2): authenticate the client, check the grant type, check DPoP,
 * then the grant: `authorization_code` (one-time, 60 s, bound to client, redirect URI and PKCE
 * verifier) or `refresh_token` (rotating, family revoked on reuse).
 */
export default async function tokenRoutes(app: FastifyInstance): Promise<void> {
  const { config } = app.kp;
  const limiter = new RateLimiter(app.kp.state);

  async function limit(bucket: 'token:ip' | 'token:client', subject: string, max: number): Promise<void> {
    const decision = await limiter.hit(bucket, subject, { max, windowMs: 60_000 });
    enforceLimit(decision, `too many token requests; try again in ${retryAfterSeconds(decision.retryAfterMs)} s`, {
      fields: { error: 'slow_down', error_description: 'too many token requests' },
    });
  }

  function checkDpopRequirement(client: StoredClient, proof: VerifiedDpopProof | null): void {
    if (client.metadata.dpop_bound_access_tokens && !proof) {
      throw oauthError('invalid_dpop_proof', 'this client is registered for DPoP-bound tokens: send a DPoP proof', {
        status: 400,
      });
    }
  }

  app.post(
    '/auth/token',
    {
      config: {
        discovery: {
          endpoint: 'token_endpoint',
          metadata: {
            grant_types_supported: ['authorization_code', 'refresh_token', JWT_BEARER, TOKEN_EXCHANGE_GRANT],
            token_endpoint_auth_methods_supported: [
              'client_secret_basic',
              'client_secret_post',
              'private_key_jwt',
              'none',
            ],
            token_endpoint_auth_signing_alg_values_supported: ['ES256', 'EdDSA', 'PS256', 'RS256'],
            dpop_signing_alg_values_supported: [...DPOP_ALGORITHMS],
          },
        },
      },
      schema: {
        tags: ['oidc'],
        summary:
          'OIDC token endpoint: authorization_code (PKCE) and refresh_token grants; DPoP-bound tokens with a DPoP header; errors carry error/error_description too',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: { type: 'object', additionalProperties: true },
        response: { 200: tokenResponse, ...errorResponses },
      },
    },
    async (request, reply) => {
      noStore(reply);
      const body = readTokenRequestBody(request.body);
      // Per address before authentication; per client only once the client is proven, so that
      // nobody can use up another client's budget by naming it.
      await limit('token:ip', request.ip, config.limits.authPerIpPerMinute);
      const client = await authenticateClient(app.kp, request.headers.authorization, body);
      await limit('token:client', client.clientId, config.limits.authPerIpPerMinute * 10);
      const grantType = stringParam(body, 'grant_type');
      if (!grantType) throw oauthError('invalid_request', 'grant_type is required');
      if (grantType === JWT_BEARER) {
        // Agents (RFC 7523 §2.1): admitted by the client's access declaration, not its grant_types.
        if (!client.metadata.access.agents)
          throw oauthError('unauthorized_client', 'this client does not admit agents');
        const issued = await jwtBearerGrant(
          app.kp,
          client,
          body,
          await checkDpopHeader(app.kp, request, reply, '/auth/token', 'token'),
        );
        return {
          access_token: issued.accessToken,
          token_type: 'DPoP',
          expires_in: issued.expiresIn,
          scope: issued.scope,
          ...(issued.receipt ? { receipt: issued.receipt } : {}),
        };
      }
      const grants = {
        authorization_code: authorizationCodeGrant,
        refresh_token: refreshTokenGrant,
        [DEVICE_CODE_GRANT]: deviceCodeGrant,
        [TOKEN_EXCHANGE_GRANT]: tokenExchangeGrant,
      };
      if (!Object.hasOwn(grants, grantType))
        throw oauthError(
          'unsupported_grant_type',
          `grant_type must be one of ${[...Object.keys(grants), JWT_BEARER].join(', ')}`,
        );
      const known = grantType as keyof typeof grants;
      if (!client.metadata.grant_types.includes(known))
        throw oauthError('unauthorized_client', `this client is not registered for ${grantType}`);
      const proof = await checkDpopHeader(app.kp, request, reply, '/auth/token', 'token');
      checkDpopRequirement(client, proof);
      const grant = grants[known];
      const result = await grant(app.kp, client, body, proof);
      return {
        access_token: result.minted.accessToken,
        token_type: result.proof ? 'DPoP' : 'Bearer',
        expires_in: result.minted.expiresIn,
        scope: formatScope(result.scopes),
        ...(result.minted.idToken ? { id_token: result.minted.idToken } : {}),
        ...(result.refreshToken ? { refresh_token: result.refreshToken } : {}),
        // RFC 8693 §2.2.1: an exchange says what it issued.
        ...(grantType === TOKEN_EXCHANGE_GRANT ? { issued_token_type: ACCESS_TOKEN_TYPE } : {}),
        ...(result.receipt ? { receipt: result.receipt } : {}),
      };
    },
  );
}
