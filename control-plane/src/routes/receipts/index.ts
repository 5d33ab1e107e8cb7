import type { FastifyInstance } from 'fastify';
import { checkpointOf, lookUpReceipt, proveAbsence } from '../../ledger/proofs.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import transparencyRoutes from './transparency.js';

const hex64 = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;
const neighbour = {
  type: ['object', 'null'],
  required: ['index', 'key', 'path'],
  properties: { index: { type: 'integer' }, key: hex64, path: { type: 'array', items: hex64 } },
} as const;
const compactJws = {
  type: 'string',
  description: 'Compact JWS (ES256, typ keyplane-checkpoint+jwt) over {epoch, root, size, prev, at}',
} as const;
const epochParam = {
  type: 'object',
  required: ['epoch'],
  properties: { epoch: { type: 'string', pattern: '^[1-9][0-9]{0,14}$' } },
} as const;

/**
 * Receipts are found by their hash only: no listing, search or enumeration. Every look-up is
 * one indexed query, and a hash that is malformed answers exactly like an unknown one.
 */
export default async function receiptRoutes(app: FastifyInstance): Promise<void> {
  const log = app.kp.ledger.transparency;
  // Its own context: the text/plain body parser of the witness protocol stays there.
  if (log) await app.register(transparencyRoutes, { log });

  app.get(
    '/receipts/checkpoints/latest',
    {
      schema: {
        tags: ['receipts'],
        summary: 'The latest signed ledger checkpoint',
        response: { 200: okObject({ checkpoint: compactJws }, ['checkpoint']), ...errorResponses },
      },
    },
    async () => {
      return { ok: true, checkpoint: await checkpointOf(app.kp) };
    },
  );

  app.get<{ Params: { epoch: string } }>(
    '/receipts/checkpoints/:epoch',
    {
      schema: {
        tags: ['receipts'],
        summary: 'The signed checkpoint of one epoch, to follow the chain back through prev',
        params: epochParam,
        response: { 200: okObject({ checkpoint: compactJws }, ['checkpoint']), ...errorResponses },
      },
    },
    async (request) => {
      return { ok: true, checkpoint: await checkpointOf(app.kp, Number(request.params.epoch)) };
    },
  );

  app.get<{ Params: { hash: string } }>(
    '/receipts/:hash',
    {
      schema: {
        tags: ['receipts'],
        summary:
          'A receipt by its hash, with its RFC 9162 inclusion proof and signed checkpoint (or pending: true until sealed)',
        params: {
          type: 'object',
          required: ['hash'],
          properties: {
            hash: { type: 'string', description: "Lower-case hex SHA-256 of the receipt's RFC 8785 canonical JSON" },
          },
        },
        response: {
          200: okObject(
            {
              receipt: { type: 'object', additionalProperties: true },
              pending: { type: 'boolean' },
              proof: {
                type: 'object',
                required: ['epoch', 'index', 'size', 'path'],
                properties: {
                  epoch: { type: 'integer' },
                  index: { type: 'integer' },
                  size: { type: 'integer' },
                  path: { type: 'array', items: hex64 },
                },
              },
              checkpoint: compactJws,
              tlog_index: {
                type: 'integer',
                description: "The position of the receipt's tree key in the transparency log (C2SP tlog-tiles)",
              },
              tree_size: {
                type: 'integer',
                description: 'The size of the first log checkpoint that holds it',
              },
            },
            ['receipt'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ ok: true, ...(await lookUpReceipt(app.kp, request.params.hash)) }),
  );

  app.get<{ Params: { hash: string }; Querystring: { epoch: string } }>(
    '/receipts/:hash/absence',
    {
      schema: {
        tags: ['receipts'],
        summary:
          'Proof that a receipt hash is not in a sealed epoch: the neighbouring tree keys with their audit paths',
        params: { type: 'object', required: ['hash'], properties: { hash: hex64 } },
        querystring: {
          type: 'object',
          required: ['epoch'],
          additionalProperties: false,
          properties: { epoch: { type: 'string', pattern: '^[1-9][0-9]{0,14}$' } },
        },
        response: {
          200: okObject(
            {
              absence: {
                type: 'object',
                required: ['epoch', 'key', 'size', 'left', 'right'],
                properties: {
                  epoch: { type: 'integer' },
                  key: hex64,
                  size: { type: 'integer' },
                  left: neighbour,
                  right: neighbour,
                },
              },
              checkpoint: compactJws,
            },
            ['absence', 'checkpoint'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      ok: true,
      ...(await proveAbsence(app.kp, request.params.hash, Number(request.query.epoch))),
    }),
  );
}
