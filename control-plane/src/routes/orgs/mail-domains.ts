import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { loadMembership } from '../../orgs/membership.js';
import {
  addMailDomain,
  listMailDomains,
  removeMailDomain,
  startMailDomainRechecks,
  verifyMailDomain,
  type OwnerRequest,
} from '../../orgs/mail-domains.js';

const session = [{ sessionCookie: [] }];
const slugParams = {
  type: 'object',
  required: ['slug'],
  properties: { slug: { type: 'string', maxLength: 64 } },
} as const;
const domainParams = {
  type: 'object',
  required: ['slug', 'domain'],
  properties: { slug: { type: 'string', maxLength: 64 }, domain: { type: 'string', maxLength: 253 } },
} as const;
const recordSchema = {
  type: 'object',
  required: ['name', 'type', 'value'],
  properties: { name: { type: 'string' }, type: { const: 'TXT' }, value: { type: 'string' } },
} as const;

/**
 * An org's proved mail domains (docs/orgs.md#mail-domains): members read them; an owner at
 * `sensitive` adds, proves and removes them. Registered inside the orgs plugin's session subtree.
 */
export async function mailDomainRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  let stop: (() => void) | null = null;
  app.addHook('onReady', async () => {
    stop = startMailDomainRechecks(services);
  });
  app.addHook('onClose', async () => stop?.());

  const owner = async (request: FastifyRequest): Promise<OwnerRequest> => {
    const { slug } = request.params as { slug: string };
    const session = request.kp.session!;
    return {
      membership: await loadMembership(services, slug, session.identityId),
      identityId: session.identityId,
      assurance: session.assurance,
    };
  };

  app.get(
    '/org/:slug/mail-domains',
    {
      schema: {
        tags: ['orgs'],
        summary: "The org's mail domains, proved or pending, with the TXT record each needs (members)",
        security: session,
        params: slugParams,
        response: {
          200: okObject(
            {
              domains: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    domain: { type: 'string' },
                    verified: { type: 'boolean' },
                    record: recordSchema,
                    verifiedAt: { type: ['string', 'null'] },
                    lapsesAt: { type: ['string', 'null'] },
                  },
                },
              },
            },
            ['domains'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { slug } = request.params as { slug: string };
      const m = await loadMembership(services, slug, request.kp.session!.identityId);
      return { ok: true, domains: await listMailDomains(services, m) };
    },
  );

  app.post(
    '/org/:slug/mail-domains',
    {
      schema: {
        tags: ['orgs'],
        summary:
          'List a mail domain for proof (owner at sensitive); answers the TXT record to publish on that exact domain',
        security: session,
        params: slugParams,
        body: { type: 'object', required: ['domain'], properties: { domain: { type: 'string', maxLength: 253 } } },
        response: {
          200: okObject({ domain: { type: 'string' }, record: recordSchema, receipt: receiptField }, [
            'domain',
            'record',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      ok: true,
      ...(await addMailDomain(services, await owner(request), (request.body as { domain: string }).domain)),
    }),
  );

  app.post(
    '/org/:slug/mail-domains/:domain/verify',
    {
      schema: {
        tags: ['orgs'],
        summary:
          'Prove a mail domain by its TXT record `_keyplane-mail.<domain>` (owner at sensitive); 409 `domain_claimed` when another org holds it',
        security: session,
        params: domainParams,
        response: {
          200: okObject({ domain: { type: 'string' }, verified: { const: true }, receipt: receiptField }, [
            'domain',
            'verified',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      ok: true,
      ...(await verifyMailDomain(services, await owner(request), (request.params as { domain: string }).domain)),
    }),
  );

  app.delete(
    '/org/:slug/mail-domains/:domain',
    {
      schema: {
        tags: ['orgs'],
        summary: 'Remove a mail domain (owner at sensitive): its addresses stop counting for the org',
        security: session,
        params: domainParams,
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      },
    },
    async (request) => ({
      ok: true,
      ...(await removeMailDomain(services, await owner(request), (request.params as { domain: string }).domain)),
    }),
  );
}
