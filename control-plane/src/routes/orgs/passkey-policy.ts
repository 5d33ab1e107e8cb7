import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { loadMembership } from '../../orgs/membership.js';
import type { OwnerRequest } from '../../orgs/mail-domains.js';
import { previewPasskeyPolicy, setPasskeyPolicy, showPasskeyPolicy } from '../../passkeys/policy.js';

const session = [{ sessionCookie: [] }];
const slugParams = {
  type: 'object',
  required: ['slug'],
  properties: { slug: { type: 'string', maxLength: 64 } },
} as const;
const aaguids = { type: 'array', items: { type: 'string', maxLength: 36 }, maxItems: 500 } as const;
const policyBody = {
  type: 'object',
  properties: {
    aaguids_allowed: aaguids,
    aaguids_denied: aaguids,
    attestation: { enum: ['none', 'required'] },
    grace_days: { type: 'integer', minimum: 0, maximum: 365 },
  },
} as const;
const policyView = {
  aaguids_allowed: { type: 'array', items: { type: 'string' } },
  aaguids_denied: { type: 'array', items: { type: 'string' } },
  attestation: { enum: ['none', 'required'] },
  passkeys: { type: 'integer' },
  would_refuse: { type: 'integer' },
  refused: {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        identityId: { type: 'string' },
        username: { type: 'string' },
        credId: { type: 'string' },
        label: { type: 'string' },
        aaguid: { type: ['string', 'null'] },
        authenticator: { type: 'string' },
        why: { type: 'string' },
      },
    },
  },
  grace_days: { type: 'integer' },
  effective_at: { type: 'string' },
  grace_until: { type: 'string' },
  metadata: {
    type: 'object',
    properties: { loaded: { type: 'boolean' }, no: { type: 'integer' }, next_update: { type: 'string' } },
  },
};
const policyRequired = ['aaguids_allowed', 'aaguids_denied', 'attestation', 'passkeys', 'would_refuse'];

/**
 * An org's passkey policy for the accounts it manages (docs/passkeys.md#org-policy): the owner
 * reads it, previews what a change would refuse, and at `sensitive` sets it. Registered inside the
 * orgs plugin's session subtree.
 */
export async function passkeyPolicyRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const owner = async (request: FastifyRequest): Promise<OwnerRequest> => {
    const { slug } = request.params as { slug: string };
    const session = request.kp.session;
    if (!session) throw fail('unauthorized', 'sign in as an owner of the organization');
    return {
      membership: await loadMembership(services, slug, session.identityId),
      identityId: session.identityId,
      assurance: session.assurance,
    };
  };

  app.get(
    '/org/:slug/passkey-policy',
    {
      schema: {
        tags: ['orgs'],
        summary: "The org's passkey policy and the existing passkeys it refuses (owners)",
        security: session,
        params: slugParams,
        response: { 200: okObject(policyView, policyRequired), ...errorResponses },
      },
    },
    async (request) => {
      return { ok: true, ...(await showPasskeyPolicy(services, await owner(request))) };
    },
  );

  app.post(
    '/org/:slug/passkey-policy/preview',
    {
      schema: {
        tags: ['orgs'],
        summary:
          'What a passkey policy would refuse among the passkeys of the accounts the org manages, before it is set (owners); changes nothing',
        security: session,
        params: slugParams,
        body: policyBody,
        response: { 200: okObject(policyView, policyRequired), ...errorResponses },
      },
    },
    async (request) => ({
      ok: true,
      ...(await previewPasskeyPolicy(services, await owner(request), request.body as Record<string, unknown>)),
    }),
  );

  app.put(
    '/org/:slug/passkey-policy',
    {
      schema: {
        tags: ['orgs'],
        summary:
          "Set the org's passkey policy (owner at sensitive): applies to its managed accounts at registration at once and at sign-in after `grace_days` (default `passkeys.policyGraceDays`) for passkeys registered before; `aaguids_allowed` implies `attestation: required`; refusals are `authenticator_not_allowed`",
        security: session,
        params: slugParams,
        body: policyBody,
        response: { 200: okObject({ ...policyView, receipt: receiptField }, policyRequired), ...errorResponses },
      },
    },
    async (request) => ({
      ok: true,
      ...(await setPasskeyPolicy(services, await owner(request), request.body as Record<string, unknown>)),
    }),
  );
}
