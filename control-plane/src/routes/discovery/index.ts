import type { FastifyInstance } from 'fastify';
import { buildWebIdentity } from '#lib/fedcm/identity-provider.js';
import { anyObject, errorResponses } from '../../http/schemas.js';
import { declaredScopeNames } from '../../apis/apis.js';
import { JWKS_PATH, discoveryDocument, type Collected } from './metadata.js';

/**
 * Public metadata a browser app reads from its own origin before it knows anything else: OIDC
 * Discovery, its RFC 8414 copy, the JWKS and the RFC 9728 resource metadata. They hold nothing
 * private and are fetched without credentials, so any origin may read them (the Fetch standard's
 * `*`, which browsers never combine with cookies).
 */
const PUBLIC_DOCUMENTS = new Set([
  '/.well-known/openid-configuration',
  '/.well-known/oauth-authorization-server',
  JWKS_PATH,
  '/.well-known/oauth-protected-resource',
]);

export default async function discoveryRoutes(app: FastifyInstance, options: { collected: Collected }): Promise<void> {
  const { issuer } = app.kp.config;
  const cache = 'public, max-age=300';
  app.addHook('onSend', async (request, reply, payload) => {
    if (PUBLIC_DOCUMENTS.has(request.routeOptions.url ?? '')) reply.header('access-control-allow-origin', '*');
    return payload;
  });
  // The provider's scopes, then every scope an API or a gateway route declares (docs/apis.md).
  const withDeclaredScopes = async (document: Record<string, unknown>) => {
    const own = (document.scopes_supported as string[] | undefined) ?? [];
    const declared = (await declaredScopeNames(app.kp)).filter((scope) => !own.includes(scope));
    return { ...document, scopes_supported: [...own, ...declared] };
  };

  app.get(
    '/.well-known/openid-configuration',
    {
      config: { cache },
      schema: {
        tags: ['discovery'],
        summary: 'OpenID Connect discovery (advertises only what this server implements)',
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async () => withDeclaredScopes(discoveryDocument(issuer, options.collected)),
  );

  // RFC 8414 §3: the same document as authorization server metadata, for OAuth clients (MCP) that look here.
  app.get(
    '/.well-known/oauth-authorization-server',
    {
      config: { cache },
      schema: {
        tags: ['discovery'],
        summary: 'OAuth 2.0 authorization server metadata (RFC 8414): the same content as OpenID Connect discovery',
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async () => withDeclaredScopes(discoveryDocument(issuer, options.collected)),
  );

  app.get(
    JWKS_PATH,
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['discovery'],
        summary: 'JSON Web Key Set: current, next and retired public keys (ES256)',
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async (_request, reply) => {
      reply.type('application/jwk-set+json');
      return app.kp.keys.jwks();
    },
  );

  app.get(
    '/.well-known/oauth-protected-resource',
    {
      config: { cache },
      schema: {
        tags: ['discovery'],
        summary: 'OAuth 2.0 protected resource metadata (RFC 9728)',
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async () => ({
      // The resource this server itself protects is its userinfo endpoint (RFC 9728 §2: the protected resource metadata names it).
      resource: issuer,
      resource_name: 'Keyplane userinfo',
      authorization_servers: [issuer],
      scopes_supported: ['openid', 'email', 'profile'],
      jwks_uri: `${issuer}${JWKS_PATH}`,
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: ['ES256'],
      dpop_signing_alg_values_supported: ['ES256', 'EdDSA'],
      dpop_bound_access_tokens_required: false,
      resource_documentation: `${issuer}/openapi.json`,
    }),
  );

  app.get(
    '/.well-known/web-identity',
    {
      config: { cache },
      schema: {
        tags: ['discovery'],
        summary: 'FedCM well-known file: the provider configuration URL, the accounts endpoint and the login URL',
        response: {
          200: {
            type: 'object',
            required: ['provider_urls'],
            properties: {
              provider_urls: { type: 'array', items: { type: 'string' } },
              accounts_endpoint: { type: 'string' },
              login_url: { type: 'string' },
            },
          },
          ...errorResponses,
        },
      },
    },
    async () => buildWebIdentity(issuer),
  );

  app.get(
    '/.well-known/webauthn',
    {
      config: { cache },
      schema: {
        tags: ['discovery'],
        summary:
          'WebAuthn related origins (WebAuthn L3 §5.11): the registered origins of clients with in-place sign-in on, which may use this RP ID',
        response: {
          200: {
            type: 'object',
            required: ['origins'],
            properties: { origins: { type: 'array', items: { type: 'string' } } },
          },
          ...errorResponses,
        },
      },
    },
    async () => ({ origins: [...(await app.kp.clientOrigins.inPlace())] }),
  );
}
