import type { FastifyInstance, FastifyRequest } from 'fastify';
import { transmitterConfiguration } from '#lib/ssf/security-event.js';
import { anyObject, errorResponses } from '../../http/schemas.js';
import { JWKS_PATH } from '../discovery/metadata.js';
import { authorizeReceiver } from '../../ssf/receiver.js';
import {
  changeSubject,
  createStream,
  deleteStream,
  listStreams,
  ownStream,
  pollStream,
  requestVerification,
  setStreamStatus,
  streamConfiguration,
  updateStream,
} from '../../ssf/streams.js';

const TAG = 'shared signals';
const SECURITY = [{ bearerAuth: [] }];
const body = { type: 'object', additionalProperties: true } as const;
const streamQuery = {
  type: 'object',
  properties: { stream_id: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;

/**
 * The Shared Signals transmitter (OpenID SSF 1.0, CAEP 1.0, RISC 1.0): its metadata, stream
 * management, subjects, verification and the RFC 8936 poll endpoint.
 */
export default async function ssfRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const { issuer } = services.config;
  const schema = (summary: string, more: Record<string, unknown> = {}) => ({
    tags: [TAG],
    summary,
    security: SECURITY,
    ...more,
  });
  const streamBody = (request: FastifyRequest) => (request.body ?? {}) as Record<string, unknown>;

  app.get(
    '/.well-known/ssf-configuration',
    {
      schema: {
        tags: [TAG],
        summary: 'Transmitter configuration metadata (SSF 1.0 §7.1)',
        response: { 200: anyObject },
      },
    },
    async (_request, reply) => {
      void reply.header('access-control-allow-origin', '*');
      return transmitterConfiguration(issuer, `${issuer}${JWKS_PATH}`);
    },
  );

  app.post(
    '/ssf/streams',
    { schema: schema('Create a stream', { body, response: { 201: anyObject, ...errorResponses } }) },
    async (request, reply) => {
      const client = await authorizeReceiver(services, request.headers.authorization, 'manage');
      const stream = await createStream(services, client, streamBody(request));
      return reply.status(201).send(streamConfiguration(issuer, stream));
    },
  );
  app.get(
    '/ssf/streams',
    {
      schema: schema('Read one stream (stream_id) or list the receiver’s streams', {
        querystring: streamQuery,
        response: { 200: { anyOf: [anyObject, { type: 'array', items: anyObject }] }, ...errorResponses },
      }),
    },
    async (request) => {
      const client = await authorizeReceiver(services, request.headers.authorization, 'read');
      const { stream_id: streamId } = request.query as { stream_id?: string };
      if (streamId !== undefined)
        return streamConfiguration(issuer, await ownStream(services, client.clientId, streamId));
      return (await listStreams(services, client)).map((s) => streamConfiguration(issuer, s));
    },
  );
  for (const [method, replace] of [
    ['PATCH', false],
    ['PUT', true],
  ] as const)
    app.route({
      method,
      url: '/ssf/streams',
      schema: schema(replace ? 'Replace a stream’s configuration' : 'Update a stream’s configuration', {
        body,
        response: { 200: anyObject, ...errorResponses },
      }),
      handler: async (request) => {
        const client = await authorizeReceiver(services, request.headers.authorization, 'manage');
        return streamConfiguration(issuer, await updateStream(services, client, streamBody(request), replace));
      },
    });
  app.delete(
    '/ssf/streams',
    { schema: schema('Delete a stream', { querystring: streamQuery, response: errorResponses }) },
    async (request, reply) => {
      const client = await authorizeReceiver(services, request.headers.authorization, 'manage');
      await deleteStream(services, client, (request.query as { stream_id?: string }).stream_id);
      return reply.status(204).send();
    },
  );

  const statusOf = (stream: { streamId: string; status: string; statusReason: string | null }) => ({
    stream_id: stream.streamId,
    status: stream.status,
    ...(stream.statusReason ? { reason: stream.statusReason } : {}),
  });
  app.get(
    '/ssf/streams/status',
    {
      schema: schema('Read a stream’s status', {
        querystring: streamQuery,
        response: { 200: anyObject, ...errorResponses },
      }),
    },
    async (request) => {
      const client = await authorizeReceiver(services, request.headers.authorization, 'read');
      return statusOf(await ownStream(services, client.clientId, (request.query as { stream_id?: string }).stream_id));
    },
  );
  app.post(
    '/ssf/streams/status',
    { schema: schema('Enable, pause or disable a stream', { body, response: { 200: anyObject, ...errorResponses } }) },
    async (request) => {
      const client = await authorizeReceiver(services, request.headers.authorization, 'manage');
      return statusOf(await setStreamStatus(services, client, streamBody(request)));
    },
  );
  app.post(
    '/ssf/streams/verify',
    { schema: schema('Ask for a verification event', { body, response: errorResponses }) },
    async (request, reply) => {
      const client = await authorizeReceiver(services, request.headers.authorization, 'manage');
      await requestVerification(services, client, streamBody(request));
      return reply.status(204).send();
    },
  );
  // `::` is a literal colon in a fastify path (SSF 1.0 §8.1.3 names these endpoints with one).
  for (const change of ['add', 'remove'] as const)
    app.post(
      `/ssf/streams/subjects::${change}`,
      {
        schema: schema(change === 'add' ? 'Add a subject' : 'Remove a subject', {
          body,
          response: errorResponses,
        }),
      },
      async (request, reply) => {
        const client = await authorizeReceiver(services, request.headers.authorization, 'manage');
        await changeSubject(services, client, streamBody(request), change);
        // SSF 1.0 §8.1.3.2: 200 for an add, §8.1.3.3: 204 for a removal; the same whatever the subject.
        return change === 'add' ? reply.status(200).send() : reply.status(204).send();
      },
    );

  app.post(
    '/ssf/poll/:streamId',
    {
      schema: schema('Poll a stream’s events and acknowledge received ones (RFC 8936)', {
        params: {
          type: 'object',
          required: ['streamId'],
          properties: { streamId: { type: 'string', minLength: 1, maxLength: 100 } },
        },
        body,
        response: {
          200: {
            type: 'object',
            required: ['sets', 'moreAvailable'],
            properties: {
              sets: { type: 'object', additionalProperties: { type: 'string' } },
              moreAvailable: { type: 'boolean' },
            },
          },
          ...errorResponses,
        },
      }),
    },
    async (request: FastifyRequest) => {
      const client = await authorizeReceiver(services, request.headers.authorization, 'read');
      const { streamId } = request.params as { streamId: string };
      return pollStream(services, client, streamId, streamBody(request));
    },
  );
}
