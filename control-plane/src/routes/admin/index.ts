import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorizeOperator } from '../../http/operator-access.js';
import { grantOperatorRole, listOperators, OPERATOR_ROLES, revokeOperatorRole } from '../../console/operators.js';
import {
  deleteAccount,
  disableAccount,
  enableAccount,
  findAccount,
  type AccountChange,
} from '../../accounts/lifecycle.js';
import { clientSummary, findClient, revokeClient, revokeSessions, rotateClientSecret } from '../../clients/operator.js';
import { listClients } from '../../clients/find-client.js';
import { approveAgentGrantAsOperator } from '../../agents/grants.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { explainGatewayAccess, gatewayRulesView } from '../../managed-gateways/explain.js';
import { readScimTarget } from '#lib/scim/outbound.js';
import { scimSyncState } from '../../scim/push-queue.js';
import { setScimTarget } from '../../scim/push-target.js';
import { scimSyncSchema } from '../clients/scim-sync.js';

const admin = [{ bearerAuth: [] }];
const params = {
  type: 'object',
  required: ['identityId'],
  properties: {
    identityId: {
      type: 'string',
      minLength: 1,
      maxLength: 100,
      description: 'The identity id (`usr_…`); a username is accepted too.',
    },
  },
} as const;
const accountReply = okObject(
  {
    identityId: { type: 'string' },
    username: { type: 'string' },
    state: { enum: ['active', 'disabled', 'suspended'] },
    managedBy: {
      anyOf: [
        {
          type: 'object',
          required: ['orgId', 'slug'],
          properties: { orgId: { type: 'string' }, slug: { type: 'string' } },
        },
        { type: 'null' },
      ],
      description: 'The org that manages the account (created by its JIT or SCIM); null for a personal account',
    },
    receipt: receiptField,
  },
  ['identityId', 'username', 'state'],
);

const clientParams = {
  type: 'object',
  required: ['clientId'],
  properties: { clientId: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;
const clientSchema = {
  type: 'object',
  required: ['client_id', 'client_type', 'revision', 'created_at'],
  properties: {
    client_id: { type: 'string' },
    client_name: { type: ['string', 'null'] },
    client_type: { type: 'string' },
    owner: { type: ['string', 'null'] },
    revision: { type: 'integer' },
    created_at: { type: 'string' },
    redirect_uris: { type: 'array', items: { type: 'string' } },
    gateway: { type: ['object', 'null'], properties: { mode: { type: 'string' } } },
    secret_issued_at: { type: ['string', 'null'] },
  },
} as const;

function reply(change: AccountChange) {
  return { ok: true, ...change.account, ...(change.receipt ? { receipt: change.receipt } : {}) };
}

/** The operators' account API (docs/accounts.md "Disabling and deleting"): all of it behind the admin token. */
export default async function adminRoutes(app: FastifyInstance): Promise<void> {
  // The admin token (automation), or a person's console session: auditors read, operators change.
  app.addHook('onRequest', async (request) => {
    request.kp.operator = await authorizeOperator(app.kp, request, request.method === 'GET' ? 'read' : 'change');
  });
  const actor = (request: FastifyRequest) => request.kp.operator!.actor;
  const ref = (request: FastifyRequest) => (request.params as { identityId: string }).identityId;

  const operatorSchema = {
    type: 'object',
    properties: {
      identityId: { type: 'string' },
      username: { type: 'string' },
      role: { enum: OPERATOR_ROLES },
      grantedAt: { type: 'string' },
      grantedBy: { type: ['string', 'null'] },
    },
  } as const;

  app.get(
    '/admin/operators',
    {
      schema: {
        tags: ['admin'],
        summary: 'Accounts holding a console role: operators and auditors (docs/console.md#who)',
        security: admin,
        response: {
          200: okObject({ operators: { type: 'array', items: operatorSchema } }, ['operators']),
          ...errorResponses,
        },
      },
    },
    async () => ({
      ok: true,
      operators: (await listOperators(app.kp)).map((o) => ({ ...o, grantedAt: new Date(o.grantedAt).toISOString() })),
    }),
  );

  app.post(
    '/admin/operators',
    {
      schema: {
        tags: ['admin'],
        summary: 'Grant a console role (`operator`, or `auditor` for reads and exports); mailed to the other operators',
        security: admin,
        body: {
          type: 'object',
          required: ['account'],
          additionalProperties: false,
          properties: {
            account: { type: 'string', minLength: 1, maxLength: 100, description: 'identity id or username' },
            role: { enum: OPERATOR_ROLES, default: 'operator' },
          },
        },
        response: {
          200: okObject(
            {
              identityId: { type: 'string' },
              username: { type: 'string' },
              role: { enum: OPERATOR_ROLES },
              receipt: receiptField,
            },
            ['identityId', 'username', 'role'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body as { account: string; role: string };
      return { ok: true, ...(await grantOperatorRole(app.kp, body.account, body.role, actor(request))) };
    },
  );

  app.delete(
    '/admin/operators/:identityId',
    {
      schema: {
        tags: ['admin'],
        summary: "Revoke an account's console role; the last operator's is refused (409 `last_operator`)",
        security: admin,
        params,
        response: {
          200: okObject({ identityId: { type: 'string' }, username: { type: 'string' }, receipt: receiptField }, [
            'identityId',
            'username',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => ({ ok: true, ...(await revokeOperatorRole(app.kp, ref(request), actor(request))) }),
  );

  app.get(
    '/admin/gateways/:clientId/rules',
    {
      schema: {
        tags: ['admin'],
        summary:
          "A gateway client's access rules in words: who may sign in to it, and who passes each route (docs/gateway.md#seeing-the-rules)",
        security: admin,
        params: clientParams,
        response: {
          200: okObject(
            {
              clientId: { type: 'string' },
              signIn: { type: ['array', 'null'], items: { type: 'string' } },
              routes: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: { path: { type: 'string' }, rules: { type: 'array', items: { type: 'string' } } },
                },
              },
            },
            ['clientId', 'signIn', 'routes'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      ok: true,
      ...(await gatewayRulesView(app.kp, (request.params as { clientId: string }).clientId)),
    }),
  );

  app.get(
    '/admin/gateways/:clientId/explain',
    {
      schema: {
        tags: ['admin'],
        summary:
          "Whether a gateway client's access rules admit an account on a path, and the deciding rule (docs/gateway.md#explaining-a-decision)",
        security: admin,
        params: clientParams,
        querystring: {
          type: 'object',
          required: ['user', 'path'],
          properties: {
            user: { type: 'string', minLength: 1, maxLength: 100, description: 'identity id or username' },
            path: { type: 'string', pattern: '^/', maxLength: 2048 },
          },
        },
        response: {
          200: okObject(
            {
              decision: { enum: ['allow', 'deny'] },
              because: { type: 'string' },
              identityId: { type: 'string' },
              username: { type: 'string' },
              route: {
                type: ['object', 'null'],
                properties: { path: { type: 'string' }, rules: { type: 'array', items: { type: 'string' } } },
              },
              configVersion: { type: 'integer' },
            },
            ['decision', 'because', 'identityId', 'username', 'route', 'configVersion'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { clientId } = request.params as { clientId: string };
      const { user, path } = request.query as { user: string; path: string };
      const { access: _decision, ...explanation } = await explainGatewayAccess(app.kp, clientId, user, path);
      return { ok: true, ...explanation };
    },
  );

  app.get(
    '/admin/accounts/:identityId',
    {
      schema: {
        tags: ['admin'],
        summary: "An account's id, username and state (`active` or `disabled`)",
        security: admin,
        params,
        response: { 200: accountReply, ...errorResponses },
      },
    },
    async (request) => ({ ok: true, ...(await findAccount(app.kp, ref(request))) }),
  );

  app.post(
    '/admin/accounts/:identityId/disable',
    {
      schema: {
        tags: ['admin'],
        summary:
          'Disable an account: no sign-in, its sessions end and every grant is revoked; already disabled changes nothing',
        security: admin,
        params,
        response: { 200: accountReply, ...errorResponses },
      },
    },
    async (request) =>
      reply(await disableAccount(app.kp, (await findAccount(app.kp, ref(request))).identityId, actor(request))),
  );

  app.post(
    '/admin/accounts/:identityId/enable',
    {
      schema: {
        tags: ['admin'],
        summary: 'Enable a disabled account: it can sign in again',
        security: admin,
        params,
        response: { 200: accountReply, ...errorResponses },
      },
    },
    async (request) =>
      reply(await enableAccount(app.kp, (await findAccount(app.kp, ref(request))).identityId, actor(request))),
  );

  app.delete(
    '/admin/accounts/:identityId',
    {
      schema: {
        tags: ['admin'],
        summary: 'Delete an account and everything it holds; receipts keep only its pseudonymous id',
        security: admin,
        params,
        response: {
          200: okObject({ identityId: { type: 'string' }, deleted: { const: true }, receipt: receiptField }, [
            'identityId',
            'deleted',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { identityId, receipt } = await deleteAccount(
        app.kp,
        (await findAccount(app.kp, ref(request))).identityId,
        'admin',
        actor(request),
      );
      return { ok: true, identityId, deleted: true, ...(receipt ? { receipt } : {}) };
    },
  );

  app.post(
    '/admin/accounts/:identityId/sessions/revoke',
    {
      schema: {
        tags: ['admin'],
        summary:
          "End an account's live sessions (or only `session`) and the grants they started; each leaves a session.revoked receipt",
        security: admin,
        params,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { session: { type: 'string', minLength: 1, maxLength: 200 } },
        },
        response: {
          200: okObject(
            {
              identityId: { type: 'string' },
              username: { type: 'string' },
              revoked: { type: 'array', items: { type: 'string' } },
              receipts: { type: 'array', items: receiptField },
            },
            ['identityId', 'revoked', 'receipts'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const account = await findAccount(app.kp, ref(request));
      const only = (request.body as { session?: string } | null | undefined)?.session;
      const { revoked, receipts } = await revokeSessions(app.kp, account.identityId, only, actor(request));
      return { ok: true, identityId: account.identityId, username: account.username, revoked, receipts };
    },
  );

  app.get(
    '/admin/clients',
    {
      schema: {
        tags: ['admin'],
        summary: 'Registered clients by client id, a page at a time (`after` the last one seen); no secrets',
        security: admin,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            after: { type: 'string', maxLength: 200 },
            limit: { type: 'integer', minimum: 1, maximum: 500, default: 100 },
          },
        },
        response: {
          200: okObject({ clients: { type: 'array', items: clientSchema }, next: { type: ['string', 'null'] } }, [
            'clients',
            'next',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { after, limit } = request.query as { after?: string; limit: number };
      const page = await listClients(app.kp, after ?? null, limit);
      return { ok: true, clients: page.map(clientSummary), next: page.length === limit ? page.at(-1)!.clientId : null };
    },
  );

  const clientId = (request: FastifyRequest) => (request.params as { clientId: string }).clientId;

  app.get(
    '/admin/clients/:clientId',
    {
      schema: {
        tags: ['admin'],
        summary: "One client's registration, without secrets",
        security: admin,
        params: clientParams,
        response: { 200: okObject({ client: clientSchema }, ['client']), ...errorResponses },
      },
    },
    async (request) => ({ ok: true, client: clientSummary(await findClient(app.kp, clientId(request))) }),
  );

  app.post(
    '/admin/clients/:clientId/rotate-secret',
    {
      schema: {
        tags: ['admin'],
        summary: 'Issue a new secret to a confidential client (shown this once); the old one stops working at once',
        security: admin,
        params: clientParams,
        response: {
          200: okObject(
            {
              client_id: { type: 'string' },
              client_secret: { type: 'string' },
              revision: { type: 'integer' },
              receipt: receiptField,
            },
            ['client_id', 'client_secret', 'revision'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { client, secret, receipt } = await rotateClientSecret(
        app.kp,
        await findClient(app.kp, clientId(request)),
        actor(request),
      );
      return {
        ok: true,
        client_id: client.clientId,
        client_secret: secret,
        revision: client.revision,
        ...(receipt ? { receipt } : {}),
      };
    },
  );

  app.post(
    '/admin/clients/:clientId/revoke',
    {
      schema: {
        tags: ['admin'],
        summary: 'Revoke (delete) a client: its grants and tokens stop at once',
        security: admin,
        params: clientParams,
        response: {
          200: okObject({ client_id: { type: 'string' }, revoked: { const: true }, receipt: receiptField }, [
            'client_id',
            'revoked',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { receipt } = await revokeClient(app.kp, clientId(request), actor(request));
      return { ok: true, client_id: clientId(request), revoked: true, ...(receipt ? { receipt } : {}) };
    },
  );

  app.get(
    '/admin/clients/:clientId/scim',
    {
      schema: {
        tags: ['admin'],
        summary: "A client's outbound SCIM sync state: when it last succeeded, what waits, what fails",
        security: admin,
        params: clientParams,
        response: { 200: scimSyncSchema, ...errorResponses },
      },
    },
    async (request) => {
      const client = await findClient(app.kp, clientId(request));
      return { ok: true, ...(await scimSyncState(app.kp, client.clientId)) };
    },
  );

  app.put(
    '/admin/clients/:clientId/scim',
    {
      schema: {
        tags: ['admin'],
        summary:
          "Set the SCIM server an org's or the operator's client is pushed to (`{base_url, token}`; the token is stored sealed)",
        security: admin,
        params: clientParams,
        body: {
          type: 'object',
          required: ['base_url', 'token'],
          properties: { base_url: { type: 'string' }, token: { type: 'string' } },
        },
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      },
    },
    async (request) => {
      const client = await findClient(app.kp, clientId(request));
      const target = readScimTarget(request.body)!;
      return { ok: true, ...(await setScimTarget(app.kp, client, target, { by: 'operator', actor: actor(request) })) };
    },
  );

  app.delete(
    '/admin/clients/:clientId/scim',
    {
      schema: {
        tags: ['admin'],
        summary: "Stop pushing a client's users to its SCIM server (what was pushed stays there)",
        security: admin,
        params: clientParams,
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      },
    },
    async (request) => {
      const client = await findClient(app.kp, clientId(request));
      return { ok: true, ...(await setScimTarget(app.kp, client, null, { by: 'operator', actor: actor(request) })) };
    },
  );

  app.post(
    '/admin/agents/:agentId/grants',
    {
      schema: {
        tags: ['admin'],
        summary:
          "Approve an agent grant on the owner's behalf (keyplane agent grant): one scoped runtime credential at a client that admits agents",
        security: admin,
        params: {
          type: 'object',
          required: ['agentId'],
          properties: { agentId: { type: 'string', pattern: '^agt_[A-Za-z0-9_-]{1,64}$' } },
        },
        body: {
          type: 'object',
          required: ['client_id', 'scope'],
          additionalProperties: false,
          properties: {
            client_id: { type: 'string', minLength: 1, maxLength: 100 },
            resource: { type: 'string', minLength: 1, maxLength: 2000 },
            scope: { type: 'string', minLength: 1, maxLength: 1000 },
          },
        },
        response: {
          200: okObject({ grant_id: { type: 'string' }, receipt: receiptField }, ['grant_id']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body as { client_id: string; resource?: string; scope: string };
      const approved = await approveAgentGrantAsOperator(app.kp, {
        agentId: (request.params as { agentId: string }).agentId,
        clientId: body.client_id,
        scope: body.scope,
        ...(body.resource ? { resource: body.resource } : {}),
      });
      return { ok: true, grant_id: approved.grantId, ...(approved.receipt ? { receipt: approved.receipt } : {}) };
    },
  );
}
