import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { loadMembership } from '../../orgs/membership.js';
import type { OwnerRequest } from '../../orgs/mail-domains.js';
import { createScimToken, listScimTokens, revokeScimToken } from '../../scim/tokens.js';

const session = [{ sessionCookie: [] }];
const tags = ['orgs'];
const slug = { slug: { type: 'string', maxLength: 64 } };
const params = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});
const tokenSchema = {
  type: 'object',
  properties: {
    tokenId: { type: 'string' },
    createdAt: { type: 'string' },
    createdBy: { type: 'string' },
    lastUsedAt: { type: ['string', 'null'] },
    revokedAt: { type: ['string', 'null'] },
  },
} as const;

/**
 * An org's SCIM tokens (docs/scim.md#tokens): an owner at `sensitive` creates one (shown once),
 * lists them with their last use and revokes one. Registered inside the orgs plugin's session subtree.
 */
export async function scimTokenRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const owner = async (request: FastifyRequest): Promise<OwnerRequest> => {
    const session = request.kp.session!;
    return {
      membership: await loadMembership(services, (request.params as { slug: string }).slug, session.identityId),
      identityId: session.identityId,
      assurance: session.assurance,
    };
  };

  app.post(
    '/org/:slug/scim-tokens',
    {
      schema: {
        tags,
        summary:
          'Create a SCIM token for the org (owner at sensitive): `token` is shown once, as the secret the directory sends',
        security: session,
        params: params(slug),
        response: {
          200: okObject({ tokenId: { type: 'string' }, token: { type: 'string' }, receipt: receiptField }, [
            'tokenId',
            'token',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ ok: true, ...(await createScimToken(services, await owner(request))) }),
  );

  app.get(
    '/org/:slug/scim-tokens',
    {
      schema: {
        tags,
        summary: "The org's SCIM tokens with their last use, revoked ones too (owner at sensitive); never a secret",
        security: session,
        params: params(slug),
        response: { 200: okObject({ tokens: { type: 'array', items: tokenSchema } }, ['tokens']), ...errorResponses },
      },
    },
    async (request) => ({ ok: true, tokens: await listScimTokens(services, await owner(request)) }),
  );

  app.delete(
    '/org/:slug/scim-tokens/:tokenId',
    {
      schema: {
        tags,
        summary: 'Revoke a SCIM token (owner at sensitive): its next call gets 401',
        security: session,
        params: params({ ...slug, tokenId: { type: 'string', maxLength: 64 } }),
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      },
    },
    async (request) => ({
      ok: true,
      ...(await revokeScimToken(services, await owner(request), (request.params as { tokenId: string }).tokenId)),
    }),
  );
}
