import type { FastifyInstance, FastifyReply } from 'fastify';
import { DPOP_ALGORITHMS, type VerifiedDpopProof } from '#lib/dpop/verify-dpop-proof.js';
import { enforceLimit, retryAfterSeconds } from '#lib/errors/rate-limited.js';
import { oauthError } from '#lib/oauth/errors.js';
import { GRANT_DECLARATIONS, GRANT_TYPES, admitsGrant, isGrantType } from '#lib/oauth/grant-types.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import { checkDpopHeader } from '../../oidc/dpop-header.js';
import { TOKEN_GRANTS } from '../../oidc/grants/registry.js';
import { readTokenRequestBody, stringParam } from '../../oidc/token-request.js';
import type { StoredClient } from '../../storage/interface.js';
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
      description:
        'Rotates on every use (a FAPI 2.0 client keeps its own: none is sent); only with offline_access and the refresh_token grant registered.',
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
            grant_types_supported: GRANT_TYPES,
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
      if (!isGrantType(grantType))
        throw oauthError('unsupported_grant_type', `grant_type must be one of ${GRANT_TYPES.join(', ')}`);
      if (!admitsGrant(client.metadata, grantType))
        throw oauthError(
          'unauthorized_client',
          GRANT_DECLARATIONS[grantType].admittedBy === 'access.agents'
            ? 'this client does not admit agents'
            : `this client is not registered for ${grantType}`,
        );
      const proof = await checkDpopHeader(app.kp, request, reply, '/auth/token', 'token');
      checkDpopRequirement(client, proof);
      return TOKEN_GRANTS[grantType](app.kp, client, body, proof);
    },
  );
}
