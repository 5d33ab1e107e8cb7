import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorPage } from '../../plugins/errors.js';
import type { Actor } from '../../events/types.js';
import { loadMembership, loadOrgAsOperator } from '../../orgs/membership.js';
import { resendEnrolment } from '../../orgs/enrolment-links.js';
import { isHtmlFormPost } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';

const tags = ['orgs'];
const slugParam = { slug: { type: 'string', maxLength: 64 } };
const params = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});
const sent = {
  200: okObject({ expiresAt: { type: 'string' }, receipt: receiptField }, ['expiresAt']),
  ...errorResponses,
};

/**
 * A new passkey enrolment link for a managed account (docs/scim.md#a-new-link), as a JSON call
 * (an admin's or owner's session, or the operator's admin token) and as the dashboard's plain
 * form beside the member. Registered inside the org routes' session subtree.
 */
export async function enrolmentLinkRoutes(app: FastifyInstance, dashboardAgain: ErrorPage): Promise<void> {
  const services = app.kp;
  const member = (request: FastifyRequest) => {
    const { slug } = request.params as { slug: string };
    return request.kp.operator
      ? loadOrgAsOperator(services, slug)
      : loadMembership(services, slug, request.kp.session!.identityId);
  };
  const actor = (request: FastifyRequest): Actor =>
    request.kp.operator?.actor ?? { type: 'person', id: request.kp.session!.identityId };
  const resend = (who: (request: FastifyRequest) => string) => async (request: FastifyRequest, reply: FastifyReply) => {
    const result = await resendEnrolment(services, await member(request), actor(request), who(request));
    if (!isHtmlFormPost(request)) return { ok: true, ...result };
    const { slug } = request.params as { slug: string };
    return reply.redirect(`/org/${encodeURIComponent(slug)}?sent=${encodeURIComponent(who(request))}#members-h`, 303);
  };

  app.post(
    '/org/:slug/members/:identityId/enrolment-link',
    {
      config: { acceptsAdminToken: true },
      schema: {
        tags,
        summary:
          'Mail a managed account without a passkey a new enrolment link (org admin or owner); its unused links stop working',
        security: [{ sessionCookie: [] }, { bearerAuth: [] }],
        params: params({ ...slugParam, identityId: { type: 'string', maxLength: 100 } }),
        response: sent,
      },
    },
    resend((request) => (request.params as { identityId: string }).identityId),
  );
  app.post(
    '/org/:slug/members/enrolment-link',
    {
      config: { errorPage: dashboardAgain },
      schema: {
        tags,
        summary: 'The dashboard form of POST …/members/{identityId}/enrolment-link',
        security: [{ sessionCookie: [] }],
        params: params(slugParam),
        body: { type: 'object', required: ['user'], properties: { user: { type: 'string', maxLength: 100 } } },
        response: sent,
      },
    },
    resend((request) => (request.body as { user: string }).user),
  );
}
