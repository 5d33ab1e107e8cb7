import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorPage } from '../../plugins/errors.js';
import type { Actor } from '../../events/types.js';
import { loadMembership, loadOrgAsOperator } from '../../orgs/membership.js';
import { addTeamMember, createTeam, deleteTeam, listTeams, removeTeamMember, renameTeam } from '../../orgs/teams.js';
import { isHtmlFormPost } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';

const session = [{ sessionCookie: [] }];
/** The JSON calls: a member's session, or the operator's admin token (any org). */
const sessionOrAdmin: Record<string, string[]>[] = [{ sessionCookie: [] }, { bearerAuth: [] }];
const tags = ['orgs'];
const slugParam = { slug: { type: 'string', maxLength: 64 } };
const teamParam = { team: { type: 'string', maxLength: 64 } };
const userParam = { identityId: { type: 'string', maxLength: 100 } };
const params = (properties: Record<string, unknown>) => ({
  type: 'object',
  required: Object.keys(properties),
  properties,
});
const teamBody = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 100 },
    displayName: { type: ['string', 'null'], maxLength: 200 },
  },
};
const userBody = { type: 'object', required: ['user'], properties: { user: { type: 'string', maxLength: 100 } } };
const teamReply = okObject({ name: { type: 'string' }, displayName: { type: 'string' }, receipt: receiptField }, [
  'name',
  'displayName',
]);
const receiptOnly = { 200: okObject({ receipt: receiptField }), ...errorResponses };

/** The org's teams as `GET /org/{slug}/teams` and the dashboard's JSON list them. */
export const teamListSchema = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      displayName: { type: 'string' },
      members: { type: 'array', items: { type: 'string' } },
    },
  },
} as const;

interface TeamRequest {
  slug: string;
  team: string;
  identityId: string;
}

/**
 * Teams of an org (docs/orgs.md#teams): create, rename, delete and members as JSON calls and,
 * for the dashboard's plain forms, POST twins of its PUT and DELETE calls. Registered inside the
 * org routes' session subtree; `dashboardAgain` shows a form's refusal on the dashboard. The JSON
 * calls (route config `acceptsAdminToken`) take the operator's admin token too, acting on any org with an
 * owner's powers (`keyplane orgs teams`).
 */
export async function teamRoutes(app: FastifyInstance, dashboardAgain: ErrorPage): Promise<void> {
  const services = app.kp;
  const member = (request: FastifyRequest) => {
    const { slug } = request.params as TeamRequest;
    return request.kp.operator
      ? loadOrgAsOperator(services, slug)
      : loadMembership(services, slug, request.kp.session!.identityId);
  };
  const actor = (request: FastifyRequest): Actor =>
    request.kp.operator?.actor ?? { type: 'person', id: request.kp.session!.identityId };
  const team = (request: FastifyRequest) => (request.params as TeamRequest).team;
  /** After a plain HTML form, back to the dashboard; otherwise the JSON answer. */
  const answer = (request: FastifyRequest, reply: FastifyReply, body: Record<string, unknown>) =>
    isHtmlFormPost(request)
      ? reply.redirect(`/org/${encodeURIComponent((request.params as TeamRequest).slug)}#teams-h`, 303)
      : { ok: true, ...body };
  const config = { errorPage: dashboardAgain };
  const api = { acceptsAdminToken: true };

  app.get(
    '/org/:slug/teams',
    {
      config: api,
      schema: {
        tags,
        summary: "The org's teams with their members' identity ids (any member of the org)",
        security: sessionOrAdmin,
        params: params(slugParam),
        response: {
          200: okObject({ teams: teamListSchema }),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ ok: true, teams: await listTeams(services, await member(request)) }),
  );

  app.post(
    '/org/:slug/teams',
    {
      config: { ...config, ...api },
      schema: {
        tags,
        summary: 'Create a team `{name, displayName?}` (org admin or owner); `name` is its slug, fixed',
        security: sessionOrAdmin,
        params: params(slugParam),
        body: { ...teamBody, required: ['name'] },
        response: { 201: teamReply, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { team: created, receipt } = await createTeam(
        services,
        await member(request),
        actor(request),
        request.body as { name: unknown; displayName?: unknown },
      );
      if (!isHtmlFormPost(request)) reply.code(201);
      return answer(request, reply, {
        name: created.slug,
        displayName: created.displayName,
        ...(receipt ? { receipt } : {}),
      });
    },
  );

  const rename = async (request: FastifyRequest, reply: FastifyReply) => {
    const { team: renamed, receipt } = await renameTeam(
      services,
      await member(request),
      actor(request),
      team(request),
      request.body as { displayName?: unknown },
    );
    return answer(request, reply, {
      name: renamed.slug,
      displayName: renamed.displayName,
      ...(receipt ? { receipt } : {}),
    });
  };
  const renameSchema = {
    tags,
    summary: "Change a team's display name (its name, the slug, stays)",
    security: session,
    params: params({ ...slugParam, ...teamParam }),
    body: teamBody,
    response: { 200: teamReply, ...errorResponses },
  };
  app.put('/org/:slug/teams/:team', { config: api, schema: { ...renameSchema, security: sessionOrAdmin } }, rename);
  app.post('/org/:slug/teams/:team/rename', { config, schema: renameSchema }, rename);

  const remove = async (request: FastifyRequest, reply: FastifyReply) =>
    answer(request, reply, await deleteTeam(services, await member(request), actor(request), team(request)));
  const removeSchema = {
    tags,
    summary: 'Delete a team; grants its members no longer qualify for end',
    security: session,
    params: params({ ...slugParam, ...teamParam }),
    response: receiptOnly,
  };
  app.delete('/org/:slug/teams/:team', { config: api, schema: { ...removeSchema, security: sessionOrAdmin } }, remove);
  app.post('/org/:slug/teams/:team/delete', { config, schema: removeSchema }, remove);

  const memberParams = params({ ...slugParam, ...teamParam, ...userParam });
  const fromPath = (request: FastifyRequest) => (request.params as TeamRequest).identityId;
  const fromForm = (request: FastifyRequest) => (request.body as { user: string }).user;
  const changeMember =
    (change: typeof addTeamMember, who: (request: FastifyRequest) => string) =>
    async (request: FastifyRequest, reply: FastifyReply) =>
      answer(
        request,
        reply,
        await change(services, await member(request), actor(request), team(request), who(request)),
      );
  const memberSchema = (summary: string, form: boolean) => ({
    tags,
    summary,
    security: form ? session : sessionOrAdmin,
    params: form ? params({ ...slugParam, ...teamParam }) : memberParams,
    ...(form ? { body: userBody } : {}),
    response: receiptOnly,
  });
  const path = '/org/:slug/teams/:team/members';
  app.put(
    `${path}/:identityId`,
    { config: api, schema: memberSchema('Add a member of the org to the team', false) },
    changeMember(addTeamMember, fromPath),
  );
  app.delete(
    `${path}/:identityId`,
    {
      config: api,
      schema: memberSchema('Remove a member from the team; grants it no longer qualifies for end', false),
    },
    changeMember(removeTeamMember, fromPath),
  );
  app.post(
    `${path}/add`,
    { config, schema: memberSchema('The dashboard form of PUT …/members/{identityId}', true) },
    changeMember(addTeamMember, fromForm),
  );
  app.post(
    `${path}/remove`,
    { config, schema: memberSchema('The dashboard form of DELETE …/members/{identityId}', true) },
    changeMember(removeTeamMember, fromForm),
  );
}
