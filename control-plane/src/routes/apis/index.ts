import type { FastifyInstance, FastifyRequest } from 'fastify';
import { apiView, declareApi, getApi, listApis, removeApi, updateApi, type ApiActor } from '../../apis/apis.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { requireSession } from '../../plugins/session.js';
import { requireAdminToken } from '#lib/http/admin-token.js';

const apiProperties = {
  apiId: { type: 'string' },
  resource: { type: 'string' },
  name: { type: 'string' },
  scopes: {
    type: 'array',
    items: {
      type: 'object',
      properties: { name: { type: 'string' }, description: {} },
    },
  },
  allowed_clients: { type: 'array', items: { type: 'string' } },
  allowed_orgs: { type: 'array', items: { type: 'string' } },
  org: { type: ['string', 'null'] },
  revision: { type: 'integer' },
  created_at: { type: 'string' },
  updated_at: { type: 'string' },
  receipt: receiptField,
} as const;
const apiReply = okObject(apiProperties, ['apiId', 'resource', 'scopes']);
const listReply = okObject({ apis: { type: 'array', items: { type: 'object', properties: apiProperties } } }, ['apis']);
const declaration = {
  type: 'object',
  required: ['resource', 'name', 'scopes'],
  properties: {
    resource: { type: 'string', maxLength: 2000 },
    name: { type: 'string', maxLength: 200 },
    scopes: { type: 'array', maxItems: 100, items: { type: 'object' } },
    allowed_clients: { type: 'array', maxItems: 100, items: { type: 'string' } },
    allowed_orgs: { type: 'array', maxItems: 50, items: { type: 'string' } },
    revision: { type: 'integer' },
  },
} as const;
const slugParam = { slug: { type: 'string', minLength: 1, maxLength: 64 } } as const;
const apiIdParam = { apiId: { type: 'string', minLength: 1, maxLength: 100 } } as const;

/**
 * One API's routes under a prefix (`/admin/apis` for the operator, `/org/{slug}/apis` for an org's
 * admins), the same operations behind either (docs/apis.md).
 */
function apiRoutes(
  app: FastifyInstance,
  prefix: string,
  actorOf: (request: FastifyRequest) => ApiActor,
  security: Record<string, string[]>[],
  params: Record<string, unknown>,
): void {
  const tags = ['apis'];
  const withParams = (extra: Record<string, unknown> = {}) => ({
    type: 'object',
    required: [...Object.keys(params), ...Object.keys(extra)],
    properties: { ...params, ...extra },
  });
  const apiIdOf = (request: FastifyRequest) => (request.params as { apiId: string }).apiId;
  const answer = (result: Awaited<ReturnType<typeof declareApi>>) => ({
    ok: true,
    ...apiView(result.api),
    ...(result.receipt ? { receipt: result.receipt } : {}),
  });

  app.post(
    prefix,
    {
      schema: {
        tags,
        summary: 'Declare an API (a resource URI) with its scopes and who may ask for them',
        security,
        params: withParams(),
        body: declaration,
        response: { 201: apiReply, ...errorResponses },
      },
    },
    async (request, reply) => {
      const result = await declareApi(app.kp, actorOf(request), request.body);
      reply.code(201);
      return answer(result);
    },
  );
  app.get(
    prefix,
    {
      schema: {
        tags,
        summary: 'The APIs declared here',
        security,
        params: withParams(),
        response: { 200: listReply, ...errorResponses },
      },
    },
    async (request) => ({ ok: true, apis: (await listApis(app.kp, actorOf(request))).map(apiView) }),
  );
  app.get(
    `${prefix}/:apiId`,
    {
      schema: {
        tags,
        summary: 'One API',
        security,
        params: withParams(apiIdParam),
        response: { 200: apiReply, ...errorResponses },
      },
    },
    async (request) => ({ ok: true, ...apiView(await getApi(app.kp, actorOf(request), apiIdOf(request))) }),
  );
  app.put(
    `${prefix}/:apiId`,
    {
      schema: {
        tags,
        summary:
          "Replace an API's name, scopes and admission (the resource stays); `revision` guards against lost updates",
        security,
        params: withParams(apiIdParam),
        body: declaration,
        response: { 200: apiReply, ...errorResponses },
      },
    },
    async (request) => answer(await updateApi(app.kp, actorOf(request), apiIdOf(request), request.body)),
  );
  app.delete(
    `${prefix}/:apiId`,
    {
      schema: {
        tags,
        summary: 'Remove an API: its scopes are granted no more',
        security,
        params: withParams(apiIdParam),
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      },
    },
    async (request) => {
      const { receipt } = await removeApi(app.kp, actorOf(request), apiIdOf(request));
      return { ok: true, ...(receipt ? { receipt } : {}) };
    },
  );
}

/** APIs and their scopes (docs/apis.md): the operator's with the admin token, an org's for its admins. */
export default async function apisRoutes(app: FastifyInstance): Promise<void> {
  await app.register(async (app) => {
    app.addHook('onRequest', async (request) =>
      requireAdminToken(app.kp.config.adminToken, request.headers.authorization),
    );
    apiRoutes(app, '/admin/apis', () => ({ kind: 'operator' }), [{ bearerAuth: [] }], {});
  });
  await app.register(async (app) => {
    app.addHook('onRequest', requireSession);
    apiRoutes(
      app,
      '/org/:slug/apis',
      (request) => ({
        kind: 'org',
        slug: (request.params as { slug: string }).slug,
        identityId: request.kp.session!.identityId,
      }),
      [{ sessionCookie: [] }],
      slugParam,
    );
  });
}
