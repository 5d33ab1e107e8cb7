import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { constantEquals } from '../../../../lib/util/constant-equals.js';
import { deleteAccount, disableAccount, enableAccount, findAccount, type AccountChange } from '../../accounts/lifecycle.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';

const BEARER = /^Bearer +(\S+)$/i;
const admin = [{ bearerAuth: [] }];
const params = {
  type: 'object', required: ['identityId'],
  properties: { identityId: { type: 'string', minLength: 1, maxLength: 100, description: 'The identity id (`usr_…`); a username is accepted too.' } },
} as const;
const accountReply = okObject({
  identityId: { type: 'string' }, username: { type: 'string' }, state: { enum: ['active', 'disabled'] }, receipt: receiptField,
}, ['identityId', 'username', 'state']);

/** The operator's admin token as a Bearer token, compared in constant time; no token configured means no admin API. */
function requireAdminToken(app: FastifyInstance, request: FastifyRequest): void {
  const expected = app.kp.config.adminToken;
  const presented = BEARER.exec(request.headers.authorization ?? '')?.[1];
  if (expected === undefined) throw fail('unauthorized', 'the admin API is off: no admin token is configured', { headers: { 'www-authenticate': 'Bearer' } });
  if (presented === undefined || !constantEquals(presented, expected)) throw fail('unauthorized', 'send the admin token as a Bearer token', { headers: { 'www-authenticate': 'Bearer error="invalid_token"' } });
}

function reply(change: AccountChange) {
  return { ok: true, ...change.account, ...(change.receipt ? { receipt: change.receipt } : {}) };
}

/** The operators' account API (docs/accounts.md "Disabling and deleting"): all of it behind the admin token. */
export default async function adminRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', async (request) => requireAdminToken(app, request));
  const ref = (request: FastifyRequest) => (request.params as { identityId: string }).identityId;

  app.get('/admin/accounts/:identityId', {
    schema: { tags: ['admin'], summary: 'An account\'s id, username and state (`active` or `disabled`)', security: admin, params, response: { 200: accountReply, ...errorResponses } },
  }, async (request) => ({ ok: true, ...(await findAccount(app.kp, ref(request))) }));

  app.post('/admin/accounts/:identityId/disable', {
    schema: {
      tags: ['admin'], summary: 'Disable an account: no sign-in, its sessions end and every grant is revoked; already disabled changes nothing',
      security: admin, params, response: { 200: accountReply, ...errorResponses },
    },
  }, async (request) => reply(await disableAccount(app.kp, (await findAccount(app.kp, ref(request))).identityId)));

  app.post('/admin/accounts/:identityId/enable', {
    schema: { tags: ['admin'], summary: 'Enable a disabled account: it can sign in again', security: admin, params, response: { 200: accountReply, ...errorResponses } },
  }, async (request) => reply(await enableAccount(app.kp, (await findAccount(app.kp, ref(request))).identityId)));

  app.delete('/admin/accounts/:identityId', {
    schema: {
      tags: ['admin'], summary: 'Delete an account and everything it holds; receipts keep only its pseudonymous id',
      security: admin, params, response: { 200: okObject({ identityId: { type: 'string' }, deleted: { const: true }, receipt: receiptField }, ['identityId', 'deleted']), ...errorResponses },
    },
  }, async (request) => {
    const { identityId, receipt } = await deleteAccount(app.kp, (await findAccount(app.kp, ref(request))).identityId, 'admin');
    return { ok: true, identityId, deleted: true, ...(receipt ? { receipt } : {}) };
  });
}
