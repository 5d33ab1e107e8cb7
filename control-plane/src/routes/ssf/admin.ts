import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { requireOperator } from '../../plugins/operator.js';
import { deleteStreamAsOperator, listStreamsPage, setStreamStatusAsOperator } from '../../ssf/streams.js';
import type { SsfStreamCounts, StoredSsfStream } from '../../storage/interface.js';

const SECURITY = [{ bearerAuth: [] }];
const PAGE = { default: 50, max: 200 };

const countsSchema = {
  type: 'object',
  required: ['subjects', 'pending', 'delivered', 'dead'],
  properties: {
    subjects: { type: 'integer', description: 'Accounts the receiver added that it may hear of' },
    pending: { type: 'integer', description: 'Events waiting to be pushed or polled' },
    delivered: { type: 'integer', description: 'Events delivered (kept until pruned)' },
    dead: { type: 'integer', description: 'Events given up on after every retry (kept until pruned)' },
  },
} as const;
const streamSchema = {
  type: 'object',
  required: ['streamId', 'clientId', 'status', 'delivery', 'counts'],
  properties: {
    streamId: { type: 'string' },
    clientId: { type: 'string', description: 'The receiver: the client whose token manages the stream' },
    status: { enum: ['enabled', 'paused', 'disabled'] },
    statusReason: { type: ['string', 'null'] },
    delivery: { enum: ['push', 'poll'] },
    endpointUrl: { type: ['string', 'null'], description: 'The push endpoint; null for a poll stream' },
    eventsRequested: { type: 'array', items: { type: 'string' } },
    description: { type: ['string', 'null'] },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
    counts: countsSchema,
  },
} as const;
const params = {
  type: 'object',
  required: ['streamId'],
  properties: { streamId: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;

const NO_COUNTS: SsfStreamCounts = { subjects: 0, pending: 0, delivered: 0, dead: 0 };

/** A stream as the operator reads it: never its push Authorization value. */
const streamView = (stream: StoredSsfStream, counts: SsfStreamCounts = NO_COUNTS) => ({
  streamId: stream.streamId,
  clientId: stream.clientId,
  status: stream.status,
  statusReason: stream.statusReason,
  delivery: stream.delivery,
  endpointUrl: stream.endpointUrl,
  eventsRequested: stream.eventsRequested,
  description: stream.description,
  createdAt: new Date(stream.createdAt).toISOString(),
  updatedAt: new Date(stream.updatedAt).toISOString(),
  counts,
});

/**
 * The operator's Shared Signals streams API (docs/events.md#shared-signals-streams-the-operators-view): every
 * receiver's streams, and their status or removal, through the operations the console's streams
 * section uses. The admin token, or a console session (an auditor reads; an operator changes at
 * `sensitive`); each change leaves a receipt naming who acted.
 */
export default async function ssfAdminRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const streamId = (request: FastifyRequest) => (request.params as { streamId: string }).streamId;
  const actor = (request: FastifyRequest) => request.kp.operator!.actor;

  app.get(
    '/admin/ssf/streams',
    {
      onRequest: requireOperator('read'),
      schema: {
        tags: ['admin'],
        summary: "Every receiver's Shared Signals streams by id, a page at a time, with their counts",
        security: SECURITY,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            after: { type: 'string', maxLength: 100, description: 'The `next` cursor of the page before' },
            limit: { type: 'integer', minimum: 1, maximum: PAGE.max, default: PAGE.default },
          },
        },
        response: {
          200: okObject({ streams: { type: 'array', items: streamSchema }, next: { type: ['string', 'null'] } }, [
            'streams',
            'next',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { after, limit } = request.query as { after?: string; limit: number };
      const page = await listStreamsPage(services, after ?? null, limit);
      return {
        ok: true,
        streams: page.streams.map((s) => streamView(s, page.counts.get(s.streamId))),
        next: page.next,
      };
    },
  );

  app.patch(
    '/admin/ssf/streams/:streamId',
    {
      onRequest: requireOperator('change'),
      schema: {
        tags: ['admin'],
        summary:
          "Enable, pause or disable a receiver's stream (SSF 1.0 §8.1.2); events are sent only while it is enabled",
        security: SECURITY,
        params,
        body: {
          type: 'object',
          required: ['status'],
          additionalProperties: false,
          properties: { status: { type: 'string', maxLength: 20, description: 'enabled, paused or disabled' } },
        },
        response: {
          200: okObject(
            {
              streamId: { type: 'string' },
              status: streamSchema.properties.status,
              statusReason: streamSchema.properties.statusReason,
              receipt: receiptField,
            },
            ['streamId', 'status'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { status } = request.body as { status: string };
      const { stream, receipt } = await setStreamStatusAsOperator(services, streamId(request), status, actor(request));
      return {
        ok: true,
        streamId: stream.streamId,
        status: stream.status,
        statusReason: stream.statusReason,
        ...(receipt ? { receipt } : {}),
      };
    },
  );

  app.delete(
    '/admin/ssf/streams/:streamId',
    {
      onRequest: requireOperator('change'),
      schema: {
        tags: ['admin'],
        summary: "Delete a receiver's stream with its subjects and undelivered events",
        security: SECURITY,
        params,
        response: {
          200: okObject({ streamId: { type: 'string' }, receipt: receiptField }, ['streamId']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { receipt } = await deleteStreamAsOperator(services, streamId(request), actor(request));
      return { ok: true, streamId: streamId(request), ...(receipt ? { receipt } : {}) };
    },
  );
}
