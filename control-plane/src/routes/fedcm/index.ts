import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import {
  FEDCM_PATHS,
  buildFedcmError,
  buildProviderConfig,
  isWebIdentityRequest,
  readAssertionRequest,
} from '#lib/fedcm/identity-provider.js';
import { disconnectFedcm, fedcmAccountOf, issueFedcmAssertion } from '../../fedcm/id-assertion.js';
import { inPlaceClientFor } from '../../http/in-place-origin.js';
import { CredentialLimits } from '../../passkeys/ceremony.js';
import { anyObject, errorResponses, receiptField } from '../../http/schemas.js';

const PATHS = new Set<string>([
  FEDCM_PATHS.accounts,
  FEDCM_PATHS.clientMetadata,
  FEDCM_PATHS.assertion,
  FEDCM_PATHS.disconnect,
]);
const session = [{ sessionCookie: [] }];
const fedcmError = {
  type: 'object',
  description: 'The envelope plus the FedCM error member `{"error": {"code", "error"}}`.',
  required: ['ok', 'reason'],
  properties: {
    ok: { const: false },
    reason: { type: 'string' },
    message: { type: 'string' },
    error: {
      type: 'object',
      required: ['code', 'error'],
      properties: { code: { type: 'string' }, error: { type: 'string' } },
    },
  },
} as const;
const fedcmErrors = { '4xx': fedcmError, '5xx': fedcmError } as const;
const formFields = (names: string[]) => ({
  type: 'object',
  properties: Object.fromEntries(names.map((name) => [name, { type: 'string' }])),
  additionalProperties: true,
});

/**
 * The FedCM identity provider (W3C FedCM and Login Status; docs/in-place.md#fedcm). The browser
 * calls these endpoints itself: the accounts and assertion endpoints refuse anything without
 * `Sec-Fetch-Dest: webidentity`, and the endpoints an RP origin calls answer CORS only for an
 * origin registered to the named client, one that turned in-place sign-in on.
 */
export default async function fedcmRoutes(app: FastifyInstance): Promise<void> {
  const { config } = app.kp;
  const { issuer } = config;
  const limits = new CredentialLimits(app.kp);

  // FedCM §7.5: errors carry `{"error": {"code", "error"}}`; the error handler adds it beside the envelope.
  app.addHook('onRoute', (route) => {
    if (PATHS.has(route.url))
      route.config = { ...(route.config ?? {}), errorMembers: (reason) => ({ error: buildFedcmError(reason) }) };
  });

  function requireWebIdentity(request: FastifyRequest): void {
    if (!isWebIdentityRequest(request.headers['sec-fetch-dest']))
      throw fail(
        'webidentity_required',
        "only the browser's FedCM machinery may call this endpoint (Sec-Fetch-Dest: webidentity)",
      );
  }

  app.get(
    FEDCM_PATHS.config,
    {
      config: { cache: 'public, max-age=300' },
      schema: {
        tags: ['fedcm'],
        summary: 'FedCM provider configuration: endpoints, branding, login_url',
        response: {
          200: {
            type: 'object',
            required: ['accounts_endpoint', 'id_assertion_endpoint', 'login_url'],
            properties: {
              accounts_endpoint: { type: 'string' },
              client_metadata_endpoint: { type: 'string' },
              id_assertion_endpoint: { type: 'string' },
              disconnect_endpoint: { type: 'string' },
              login_url: { type: 'string' },
              branding: anyObject,
            },
          },
          ...errorResponses,
        },
      },
    },
    async () => buildProviderConfig(issuer, 'Keyplane'),
  );

  app.get(
    FEDCM_PATHS.accounts,
    {
      schema: {
        tags: ['fedcm'],
        summary: 'FedCM accounts: the signed-in account (needs Sec-Fetch-Dest: webidentity)',
        security: session,
        headers: {
          type: 'object',
          properties: { 'sec-fetch-dest': { type: 'string', description: 'must be webidentity' } },
        },
        response: {
          200: {
            type: 'object',
            required: ['accounts'],
            properties: {
              accounts: {
                type: 'array',
                items: {
                  type: 'object',
                  required: ['id', 'name', 'approved_clients'],
                  properties: {
                    id: { type: 'string' },
                    name: { type: 'string' },
                    username: { type: 'string' },
                    email: { type: 'string' },
                    approved_clients: { type: 'array', items: { type: 'string' } },
                    login_hints: { type: 'array', items: { type: 'string' } },
                  },
                },
              },
            },
          },
          ...fedcmErrors,
        },
      },
    },
    async (request) => {
      requireWebIdentity(request);
      const current = request.kp.session;
      if (!current) throw fail('unauthorized', 'nobody is signed in');
      return { accounts: [await fedcmAccountOf(app.kp, current.identityId)] };
    },
  );

  app.get(
    FEDCM_PATHS.clientMetadata,
    {
      schema: {
        tags: ['fedcm'],
        summary:
          "FedCM client metadata: the client's privacy policy and terms (RFC 7591 policy_uri, tos_uri); the Origin must be registered to the client",
        querystring: { type: 'object', required: ['client_id'], properties: { client_id: { type: 'string' } } },
        response: {
          200: {
            type: 'object',
            properties: { privacy_policy_url: { type: 'string' }, terms_of_service_url: { type: 'string' } },
          },
          ...fedcmErrors,
        },
      },
    },
    async (request, reply) => {
      const client = (
        await inPlaceClientFor(app.kp, request, reply, (request.query as { client_id: string }).client_id)
      ).client;
      const { policy_uri: privacy, tos_uri: terms } = client.metadata;
      return { ...(privacy ? { privacy_policy_url: privacy } : {}), ...(terms ? { terms_of_service_url: terms } : {}) };
    },
  );

  app.post(
    FEDCM_PATHS.assertion,
    {
      config: { checksOwnOrigin: true },
      schema: {
        tags: ['fedcm'],
        summary:
          "FedCM ID assertion: an ES256 ID token for one registered client (aud = client_id, the RP's nonce, svc.assurance)",
        description:
          'Form fields as Chromium sends them. The nonce is read from `params` (JSON) and from a top-level `nonce`. Needs Sec-Fetch-Dest: webidentity and an Origin registered to the client.',
        security: session,
        consumes: ['application/x-www-form-urlencoded'],
        body: formFields([
          'client_id',
          'account_id',
          'params',
          'nonce',
          'is_auto_selected',
          'disclosure_text_shown',
          'disclosure_shown_for',
          'fields',
          'mode',
        ]),
        response: {
          200: {
            type: 'object',
            required: ['token'],
            properties: {
              ok: { const: true },
              token: { type: 'string', description: 'ES256 ID token' },
              receipt: receiptField,
            },
          },
          ...fedcmErrors,
        },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const client = (await inPlaceClientFor(app.kp, request, reply, body.client_id)).client;
      requireWebIdentity(request);
      await limits.perIp(request, 'fedcm-assertion');
      const current = request.kp.session;
      if (!current) throw fail('unauthorized', 'nobody is signed in');
      const { token, receipt } = await issueFedcmAssertion(app.kp, {
        session: current,
        client,
        request: readAssertionRequest(body),
      });
      return { ok: true, token, ...(receipt ? { receipt } : {}) };
    },
  );

  app.post(
    FEDCM_PATHS.disconnect,
    {
      config: { checksOwnOrigin: true },
      schema: {
        tags: ['fedcm'],
        summary: "FedCM disconnect: forgets the account's approval of the client (receipted)",
        security: session,
        consumes: ['application/x-www-form-urlencoded'],
        body: formFields(['client_id', 'account_hint']),
        response: {
          200: {
            type: 'object',
            required: ['account_id'],
            properties: { ok: { const: true }, account_id: { type: 'string' }, receipt: receiptField },
          },
          ...fedcmErrors,
        },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const client = (await inPlaceClientFor(app.kp, request, reply, body.client_id)).client;
      requireWebIdentity(request);
      const current = request.kp.session;
      if (!current) throw fail('unauthorized', 'nobody is signed in');
      const { accountId, receipt } = await disconnectFedcm(app.kp, { session: current, client });
      return { ok: true, account_id: accountId, ...(receipt ? { receipt } : {}) };
    },
  );
}
