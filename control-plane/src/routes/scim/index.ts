import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SCIM_MEDIA_TYPE, projectAttributes } from '#lib/scim/resources.js';
import { scimErrorFor } from '#lib/scim/errors.js';
import { etagMatches } from '#lib/scim/etag.js';
import { discoveryList, resourceTypes, schemas, serviceProviderConfig } from '#lib/scim/discovery.js';
import { authenticateScimToken, type ScimCaller } from '../../scim/tokens.js';
import { MAX_RESULTS, usersBase, type ListQuery } from '../../scim/users.js';
import { RESOURCE_TYPES } from '../../scim/resource-types.js';

const BASE = '/scim/v2/orgs/:slug';
const TYPE = `${SCIM_MEDIA_TYPE}; charset=utf-8`;
const tags = ['scim'];
const security = [{ bearerAuth: [] }];
const string = (maxLength: number) => ({ type: 'string', maxLength });
const params = (id: boolean) => ({
  type: 'object',
  required: id ? ['slug', 'id'] : ['slug'],
  properties: { slug: string(64), ...(id ? { id: string(200) } : {}) },
});
const projection = { attributes: string(2000), excludedAttributes: string(2000) };
const listQuery = {
  type: 'object',
  properties: { filter: string(4000), startIndex: string(12), count: string(12), ...projection },
};
/** A SCIM resource or message: its attributes are the resource type's, checked by the handlers (lib/scim). */
const scimObject = { type: 'object', additionalProperties: true, description: `${SCIM_MEDIA_TYPE} body` };
const answers = (code: number, what: string) => ({ [code]: { ...scimObject, description: what } });

/**
 * The SCIM 2.0 server of each org (RFC 7643/7644; docs/scim.md) at `/scim/v2/orgs/{slug}`:
 * discovery, Users and Groups, with the org's bearer tokens. Every answer and every refusal is
 * `application/scim+json`; a refusal carries the SCIM error message beside the envelope.
 */
export default async function scimRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  app.addContentTypeParser(SCIM_MEDIA_TYPE, { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && (request.method === 'GET' || request.method === 'DELETE')) return done(null, undefined);
    return parseJson(request, body as string, done);
  });
  app.addHook('onRoute', (route) => {
    route.config = {
      ...(route.config ?? {}),
      errorMembers: (_reason, failure) => scimErrorFor(failure),
      errorType: TYPE,
    };
  });
  app.addHook('onRequest', async (request) => {
    const { slug } = request.params as { slug: string };
    const caller = await authenticateScimToken(services, slug, request.headers.authorization);
    request.kp.scim = caller;
  });

  const caller = (request: FastifyRequest): ScimCaller => request.kp.scim!;
  const id = (request: FastifyRequest) => (request.params as { id: string }).id;
  const base = (request: FastifyRequest) => usersBase(services, caller(request).org.slug);
  const send = (reply: FastifyReply, body: unknown, code = 200) => reply.code(code).type(TYPE).send(body);
  /** RFC 7644 §3.14: the resource's version travels as `ETag` beside `meta.version`. */
  const tagged = (reply: FastifyReply, resource: Record<string, unknown>) =>
    reply.header('etag', (resource.meta as { version: string }).version);
  const created = (reply: FastifyReply, resource: Record<string, unknown>) => {
    reply.header('location', (resource.meta as { location: string }).location);
    return send(tagged(reply, resource), resource, 201);
  };
  const ifMatch = (request: FastifyRequest) => request.headers['if-match'];

  app.get(
    `${BASE}/ServiceProviderConfig`,
    {
      schema: {
        tags,
        summary: 'What this SCIM server supports',
        security,
        params: params(false),
        response: answers(200, 'ServiceProviderConfig'),
      },
    },
    async (request, reply) => send(reply, serviceProviderConfig(base(request), MAX_RESULTS)),
  );
  app.get(
    `${BASE}/ResourceTypes`,
    {
      schema: {
        tags,
        summary: 'The resource types: User (with the enterprise extension) and Group',
        security,
        params: params(false),
        response: answers(200, 'ListResponse'),
      },
    },
    async (request, reply) => send(reply, discoveryList(resourceTypes(base(request)))),
  );
  app.get(
    `${BASE}/Schemas`,
    {
      schema: {
        tags,
        summary: 'The schemas of User, the enterprise extension and Group',
        security,
        params: params(false),
        response: answers(200, 'ListResponse'),
      },
    },
    async (request, reply) => send(reply, discoveryList(schemas(base(request)))),
  );

  const listSchema = (summary: string) => ({
    tags,
    summary,
    security,
    params: params(false),
    querystring: listQuery,
    response: answers(200, 'ListResponse'),
  });
  const oneSchema = (summary: string, code = 200) => ({
    tags,
    summary,
    security,
    params: params(true),
    querystring: { type: 'object', properties: projection },
    response: { ...answers(code, 'the resource'), 304: { type: 'null', description: 'unchanged (If-None-Match)' } },
  });
  const bodySchema = (summary: string, withId: boolean, code = 200) => ({
    tags,
    summary,
    security,
    params: params(withId),
    body: scimObject,
    response: answers(code, 'the resource'),
  });
  const gone = (summary: string) => ({
    tags,
    summary,
    security,
    params: params(true),
    response: { 204: { type: 'null', description: 'deleted' } },
  });

  for (const type of RESOURCE_TYPES) {
    const path = `${BASE}/${type.endpoint}`;
    const { noun } = type;
    app.get(path, { schema: listSchema(`List: each a ${noun}; filtered and paged`) }, async (request, reply) =>
      send(reply, await type.list(services, caller(request), request.query as ListQuery)),
    );
    app.post(path, { schema: bodySchema(`Create a ${noun}`, false, 201) }, async (request, reply) =>
      created(reply, (await type.create(services, caller(request), request.body)).resource),
    );
    app.get(`${path}/:id`, { schema: oneSchema(`One ${noun}`) }, async (request, reply) => {
      const { attributes, excludedAttributes } = request.query as ListQuery;
      const resource = await type.get(services, caller(request), id(request));
      const unchanged = request.headers['if-none-match'];
      tagged(reply, resource);
      if (unchanged !== undefined && etagMatches(unchanged, (resource.meta as { version: string }).version))
        return reply.code(304).send();
      return send(reply, projectAttributes(resource, attributes, excludedAttributes));
    });
    app.put(`${path}/:id`, { schema: bodySchema(`Replace a ${noun}`, true) }, async (request, reply) => {
      const { resource } = await type.change(
        services,
        caller(request),
        id(request),
        'PUT',
        request.body,
        ifMatch(request),
      );
      return send(tagged(reply, resource), resource);
    });
    const patchSchema = bodySchema(`Change a ${noun} by PatchOp operations`, true);
    app.patch(
      `${path}/:id`,
      {
        schema: type.patchAnswersResource
          ? patchSchema
          : { ...patchSchema, response: { 204: { type: 'null', description: 'changed' } } },
      },
      async (request, reply) => {
        const { resource } = await type.change(
          services,
          caller(request),
          id(request),
          'PATCH',
          request.body,
          ifMatch(request),
        );
        tagged(reply, resource);
        return type.patchAnswersResource ? send(reply, resource) : reply.code(204).send();
      },
    );
    app.delete(`${path}/:id`, { schema: gone(`Delete a ${noun}`) }, async (request, reply) => {
      await type.remove(services, caller(request), id(request), ifMatch(request));
      return reply.code(204).send();
    });
  }
}
