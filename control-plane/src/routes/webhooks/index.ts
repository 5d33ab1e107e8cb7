import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { registerOwnerScopes, type OwnerScope } from '../owner-scopes.js';
import {
  createWebhook,
  deleteWebhook,
  listWebhooks,
  ownedWebhook,
  rotateWebhookSecret,
  testWebhook,
  updateWebhook,
  webhookAttempts,
  webhookView,
} from '../../webhooks/webhooks.js';

const webhookSchema = {
  type: 'object',
  required: ['webhookId', 'url', 'events', 'state'],
  properties: {
    webhookId: { type: 'string' },
    url: { type: 'string' },
    events: { type: 'array', items: { type: 'string' } },
    description: { type: ['string', 'null'] },
    state: { enum: ['active', 'disabled'] },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
    failingSince: { type: ['string', 'null'] },
    previousSecretUntil: { type: ['string', 'null'] },
  },
} as const;
const secretField = {
  type: 'string',
  pattern: '^whsec_',
  description: 'The signing secret (Standard Webhooks), shown this once.',
} as const;
const idParams = (extra: Record<string, unknown> = {}) =>
  ({
    type: 'object',
    required: ['webhookId', ...Object.keys(extra)],
    properties: { webhookId: { type: 'string', minLength: 1, maxLength: 100 }, ...extra },
  }) as const;
const events = { type: 'array', items: { type: 'string', maxLength: 100 }, minItems: 1, maxItems: 50 } as const;
const createBody = {
  type: 'object',
  required: ['url', 'events'],
  additionalProperties: false,
  properties: { url: { type: 'string', maxLength: 2048 }, events, description: { type: 'string', maxLength: 200 } },
} as const;
const updateBody = {
  type: 'object',
  additionalProperties: false,
  properties: { ...createBody.properties, state: { enum: ['active', 'disabled'] } },
} as const;
const attemptSchema = {
  type: 'object',
  properties: {
    deliveryId: { type: 'string' },
    attempt: { type: 'integer' },
    at: { type: 'string' },
    status: { type: ['integer', 'null'] },
    error: { type: ['string', 'null'] },
  },
} as const;

/** The same routes for the operator and for an org (docs/events.md#webhooks). */
function webhookRoutes(app: FastifyInstance, scope: OwnerScope): void {
  const services = app.kp;
  const { prefix, tag, security } = scope;
  const schema = (summary: string, more: Record<string, unknown>) => ({ tags: [tag], summary, security, ...more });
  const webhookId = (request: FastifyRequest) => (request.params as { webhookId: string }).webhookId;
  const ids = idParams(scope.params);
  const collection = Object.keys(scope.params).length
    ? { type: 'object', required: Object.keys(scope.params), properties: scope.params }
    : undefined;

  app.post(
    prefix,
    {
      schema: schema('Create a webhook; its signing secret is shown this once', {
        ...(collection ? { params: collection } : {}),
        body: createBody,
        response: {
          200: okObject(
            { webhookId: { type: 'string' }, secret: secretField, webhook: webhookSchema, receipt: receiptField },
            ['webhookId', 'secret'],
          ),
          ...errorResponses,
        },
      }),
    },
    async (request) => {
      const owner = await scope.owner(request, true);
      const { webhook, secret, receipt } = await createWebhook(services, owner, request.body as never);
      return {
        ok: true,
        webhookId: webhook.webhookId,
        secret,
        webhook: webhookView(webhook),
        ...(receipt ? { receipt } : {}),
      };
    },
  );
  app.get(
    prefix,
    {
      schema: schema('List webhooks (never their secrets)', {
        ...(collection ? { params: collection } : {}),
        response: {
          200: okObject({ webhooks: { type: 'array', items: webhookSchema } }, ['webhooks']),
          ...errorResponses,
        },
      }),
    },
    async (request) => ({
      ok: true,
      webhooks: (await listWebhooks(services, await scope.owner(request, false))).map(webhookView),
    }),
  );
  app.get(
    `${prefix}/:webhookId`,
    {
      schema: schema('One webhook (never its secret)', {
        params: ids,
        response: { 200: okObject(webhookSchema.properties, [...webhookSchema.required]), ...errorResponses },
      }),
    },
    async (request) => ({
      ok: true,
      ...webhookView(await ownedWebhook(services, await scope.owner(request, false), webhookId(request))),
    }),
  );
  app.put(
    `${prefix}/:webhookId`,
    {
      schema: schema('Change the URL, filters or description, or turn the webhook off or on again', {
        params: ids,
        body: updateBody,
        response: {
          200: okObject({ ...webhookSchema.properties, receipt: receiptField }, [...webhookSchema.required]),
          ...errorResponses,
        },
      }),
    },
    async (request) => {
      const { webhook, receipt } = await updateWebhook(
        services,
        await scope.owner(request, true),
        webhookId(request),
        request.body as never,
      );
      return { ok: true, ...webhookView(webhook), ...(receipt ? { receipt } : {}) };
    },
  );
  app.delete(
    `${prefix}/:webhookId`,
    {
      schema: schema('Delete a webhook with its queue and delivery log', {
        params: ids,
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      }),
    },
    async (request) => ({
      ok: true,
      ...(await deleteWebhook(services, await scope.owner(request, true), webhookId(request))),
    }),
  );
  app.post(
    `${prefix}/:webhookId/rotate-secret`,
    {
      schema: schema('A new signing secret; the old one keeps signing beside it for 24 hours', {
        params: ids,
        response: {
          200: okObject({ secret: secretField, previousSecretUntil: { type: 'string' }, receipt: receiptField }, [
            'secret',
            'previousSecretUntil',
          ]),
          ...errorResponses,
        },
      }),
    },
    async (request) => {
      const rotated = await rotateWebhookSecret(services, await scope.owner(request, true), webhookId(request));
      return {
        ok: true,
        secret: rotated.secret,
        previousSecretUntil: new Date(rotated.previousSecretUntil).toISOString(),
        ...(rotated.receipt ? { receipt: rotated.receipt } : {}),
      };
    },
  );
  app.post(
    `${prefix}/:webhookId/test`,
    {
      schema: schema('Send a `webhook.tested` receipt to this webhook alone', {
        params: ids,
        response: {
          200: okObject({ deliveryId: { type: 'string' }, receipt: receiptField }, ['deliveryId']),
          ...errorResponses,
        },
      }),
    },
    async (request) => ({
      ok: true,
      ...(await testWebhook(services, await scope.owner(request, true), webhookId(request))),
    }),
  );
  app.get(
    `${prefix}/:webhookId/deliveries`,
    {
      schema: schema('The delivery log: the latest attempts, newest first (status or error, never a body)', {
        params: ids,
        response: {
          200: okObject({ deliveries: { type: 'array', items: attemptSchema } }, ['deliveries']),
          ...errorResponses,
        },
      }),
    },
    async (request) => ({
      ok: true,
      deliveries: (await webhookAttempts(services, await scope.owner(request, false), webhookId(request))).map((a) => ({
        deliveryId: a.deliveryId,
        attempt: a.attempt,
        at: new Date(a.at).toISOString(),
        status: a.status,
        error: a.error,
      })),
    }),
  );
}

/** The operator's webhooks (`/admin/webhooks`) and each org's (`/org/{slug}/webhooks`, its owners). */
export default async function webhooksRoutes(app: FastifyInstance): Promise<void> {
  await registerOwnerScopes(app, 'webhooks', webhookRoutes);
}
