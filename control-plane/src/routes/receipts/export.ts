import type { FastifyInstance } from 'fastify';
import { errorResponses, okObject } from '../../http/schemas.js';
import { EXPORT_LIMIT, exportReceipts, type ExportQuery } from '../../ledger/export.js';
import { requireOperator } from '../../plugins/operator.js';

const NDJSON = 'application/x-ndjson';

/** `GET /admin/receipts`: the audit export (operators, auditors, the admin token), JSON or NDJSON. */
export default async function receiptExportRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/admin/receipts',
    {
      onRequest: requireOperator('read'),
      schema: {
        tags: ['admin'],
        summary:
          'Page through receipts in ledger order (docs/events.md#audit-export); `Accept: application/x-ndjson` answers one {hash, receipt} per line',
        security: [{ bearerAuth: [] }],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            after: { type: 'string', maxLength: 20, description: 'The `next` cursor of the page before' },
            type: { type: 'string', maxLength: 100, description: 'Only receipts of this type' },
            subject: { type: 'string', maxLength: 200, description: 'Only receipts naming this opaque id' },
            since: { type: 'string', maxLength: 40, description: 'Written at or after (RFC 3339)' },
            until: { type: 'string', maxLength: 40, description: 'Written before (RFC 3339)' },
            limit: { type: 'integer', minimum: 1, maximum: EXPORT_LIMIT.max, default: EXPORT_LIMIT.default },
          },
        },
        response: {
          200: okObject(
            {
              receipts: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: { hash: { type: 'string' }, receipt: { type: 'object', additionalProperties: true } },
                },
              },
              next: { type: ['string', 'null'] },
            },
            ['receipts', 'next'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const page = await exportReceipts(app.kp, request.query as ExportQuery);
      if (!String(request.headers.accept ?? '').includes(NDJSON)) return { ok: true, ...page };
      // The cursor of the next page travels in a header: NDJSON lines are receipts only.
      if (page.next !== null) reply.header('x-next-cursor', page.next);
      reply.type(`${NDJSON}; charset=utf-8`);
      return reply.send(page.receipts.map((item) => `${JSON.stringify(item)}\n`).join(''));
    },
  );
}
