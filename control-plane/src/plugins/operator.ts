import type { FastifyRequest } from 'fastify';
import { authorizeOperator, type OperatorAccess } from '../http/operator-access.js';

/**
 * Guard for the operator's API beyond `/admin/accounts` (webhooks, the audit export): the admin
 * token, or a person's console session (an auditor reads and exports, an operator changes at
 * `sensitive`: http/operator-access.ts). Who acts lands in `request.kp.operator`, whose `actor`
 * the receipts it leaves name.
 */
export function requireOperator(need: OperatorAccess) {
  return async function (request: FastifyRequest): Promise<void> {
    request.kp.operator = await authorizeOperator(request.server.kp, request, need);
  };
}
