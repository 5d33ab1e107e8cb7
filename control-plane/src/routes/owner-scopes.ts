import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Actor } from '../events/types.js';
import { requireSession } from '../plugins/session.js';
import { requireOperator } from '../plugins/operator.js';
import { loadMembership, requireOwnerAtSensitive } from '../orgs/membership.js';

/** Who an owned resource's operation acts for: the operator (`orgId` null) or one org, and who acted. */
export interface ResourceOwner {
  orgId: string | null;
  actor: Actor;
}

/** Where one set of an owned resource's routes lives and who it acts for; `change` asks for the owner's powers. */
export interface OwnerScope {
  prefix: string;
  tag: string;
  security: Array<Record<string, string[]>>;
  params: Record<string, unknown>;
  owner(request: FastifyRequest, change: boolean): Promise<ResourceOwner>;
}

/**
 * Registers the same routes of a resource that the operator and each org own apart (connections,
 * webhooks): the operator's at `/admin/<resource>` (a console session or the admin token), an org's at
 * `/org/{slug}/<resource>` for its owners, a change at assurance `sensitive`. `orgOnly` adds routes
 * that only the org's scope has, under its session hook.
 */
export async function registerOwnerScopes(
  app: FastifyInstance,
  resource: string,
  routes: (scope: FastifyInstance, owner: OwnerScope) => void,
  orgOnly?: (orgs: FastifyInstance) => void,
): Promise<void> {
  await app.register(async (admin) => {
    admin.addHook('onRequest', requireOperator('change'));
    routes(admin, {
      prefix: `/admin/${resource}`,
      tag: 'admin',
      security: [{ bearerAuth: [] }],
      params: {},
      owner: async (request) => ({ orgId: null, actor: request.kp.operator!.actor }),
    });
  });
  await app.register(async (orgs) => {
    orgs.addHook('onRequest', requireSession);
    routes(orgs, {
      prefix: `/org/:slug/${resource}`,
      tag: 'orgs',
      security: [{ sessionCookie: [] }],
      params: { slug: { type: 'string', maxLength: 64 } },
      owner: async (request, change) => {
        const session = request.kp.session!;
        const { slug } = request.params as { slug: string };
        const membership = await loadMembership(app.kp, slug, session.identityId, 'owner');
        if (change) requireOwnerAtSensitive(membership, session.assurance);
        return { orgId: membership.org.orgId, actor: { type: 'person', id: session.identityId } };
      },
    });
    orgOnly?.(orgs);
  });
}
