import type { FastifyInstance } from 'fastify';
import { validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { errorResponses } from '../../http/schemas.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { ADMIN_TOKEN } from '../../events/types.js';
import {
  afterScimChange,
  checkScimSetter,
  setterActor,
  takeScimMember,
  writeScimTarget,
  type ScimSetter,
} from '../../scim/push-target.js';
import appsRoutes from './apps.js';
import {
  authenticateRegistrar,
  authenticateRegistrationToken,
  checkUpdateRequest,
  deleteClient,
  describeChange,
  describeClient,
  orgRegistrar,
  registerClient,
  updateClient,
} from '../../clients/registration.js';

const stringArray = { type: 'array', items: { type: 'string' } } as const;

/** What a registration response documents (RFC 7591 §3.2.1 plus Keyplane's fields). */
const clientResponse = {
  type: 'object',
  required: ['client_id', 'revision', 'registration_client_uri'],
  properties: {
    receipt: { type: 'string' },
    client_id: { type: 'string' },
    client_id_issued_at: { type: 'integer' },
    client_secret: { type: 'string', description: 'Shown once, when issued.' },
    client_secret_expires_at: { type: 'integer' },
    registration_access_token: { type: 'string', description: 'RFC 7592 management credential; shown once.' },
    registration_client_uri: { type: 'string' },
    revision: {
      type: 'integer',
      description: 'Send it back with an update; a stale one is refused with stale_revision.',
    },
    client_type: { enum: ['public', 'confidential'] },
    client_name: { type: 'string' },
    redirect_uris: stringArray,
    post_logout_redirect_uris: stringArray,
    grant_types: stringArray,
    response_types: stringArray,
    scope: { type: 'string' },
    resources: stringArray,
    access: {
      type: 'object',
      properties: {
        humans: { type: 'boolean' },
        agents: { type: 'boolean' },
        orgs: {
          type: 'array',
          items: {
            type: 'object',
            properties: { slug: { type: 'string' }, roles: { type: 'array', items: { type: 'string' } } },
          },
        },
      },
    },
    token_endpoint_auth_method: { type: 'string' },
    dpop_bound_access_tokens: { type: 'boolean' },
    gateway: { type: 'object', additionalProperties: true },
    first_party: {
      type: 'boolean',
      description: "The operator's own app: no approval page. Only with the admin token.",
    },
    jwks: { type: 'object', additionalProperties: true },
  },
  additionalProperties: true,
} as const;

const clientParams = {
  type: 'object',
  required: ['client_id'],
  properties: { client_id: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;
const anyBody = { type: 'object', additionalProperties: true } as const;
const registrationToken = [{ bearerAuth: [] }];

/**
 * Client registration for automation (docs/oidc.md#who-may-register): RFC 7591 `POST /register` with the admin
 * token or a session, and RFC 7592 read, update and delete with the registration access token.
 */
export default async function clientRoutes(app: FastifyInstance): Promise<void> {
  // A signed-in session may register too: the app-wide session plugin fills request.kp.session.
  // The owner operations and the self-serve app page (GET /apps, POST /apps/...).
  await app.register(appsRoutes);

  app.post(
    '/register',
    {
      config: { discovery: { endpoint: 'registration_endpoint' } },
      schema: {
        tags: ['clients'],
        summary: 'Register an OIDC client (RFC 7591) with the admin token or a signed-in session',
        description:
          'A session may add `org: <slug>` to register a client its organization owns (admins and owners only; docs/orgs.md#apps).',
        security: [{ bearerAuth: [] }, { sessionCookie: [] }],
        body: anyBody,
        response: { 201: clientResponse, ...errorResponses },
      },
    },
    async (request, reply) => {
      const registrar = authenticateRegistrar(app.kp, request.headers.authorization, request.kp.session);
      const { org, ...body } = (request.body ?? {}) as Record<string, unknown>;
      const owned = org === undefined ? registrar : await orgRegistrar(app.kp, registrar, org);
      const scim = takeScimMember(body);
      const metadata = validateClientMetadata(body, { defaultScopes: app.kp.config.oidc.defaultClientScopes });
      const setter: ScimSetter =
        registrar.by === 'admin'
          ? { by: 'operator', actor: ADMIN_TOKEN }
          : { by: 'person', identityId: registrar.identityId, assurance: request.kp.session!.assurance };
      if (scim !== undefined) await checkScimSetter(app.kp, owned.ownerId, setter);
      const change = await registerClient(app.kp, metadata, owned, {
        ...(scim !== undefined
          ? {
              onInsert: async (tx, client) => {
                await writeScimTarget(app.kp, tx, client, scim, setterActor(setter));
              },
            }
          : {}),
      });
      if (scim !== undefined) await afterScimChange(app.kp);
      reply.code(201);
      return describeChange(app.kp, change);
    },
  );

  app.get(
    '/register/:client_id',
    {
      schema: {
        tags: ['clients'],
        summary: 'Read a client registration (RFC 7592) with its registration access token',
        security: registrationToken,
        params: clientParams,
        response: { 200: clientResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { client_id: clientId } = request.params as { client_id: string };
      const client = await authenticateRegistrationToken(app.kp, request.headers.authorization, clientId);
      return describeClient(app.kp, client);
    },
  );

  app.put(
    '/register/:client_id',
    {
      schema: {
        tags: ['clients'],
        summary: 'Replace a client registration (RFC 7592); the body carries client_id and the current revision',
        security: registrationToken,
        params: clientParams,
        body: anyBody,
        response: { 200: clientResponse, ...errorResponses },
      },
    },
    async (request) => {
      const { client_id: clientId } = request.params as { client_id: string };
      const client = await authenticateRegistrationToken(app.kp, request.headers.authorization, clientId);
      // The registration access token is the client's, not an owner's: it never names a SCIM server.
      if ((request.body as Record<string, unknown> | null)?.scim !== undefined)
        throw fail('forbidden', "a client's SCIM server is set by an owner of its organization or by the operator");
      const { revision, metadata } = checkUpdateRequest(client, request.body, {
        defaultScopes: app.kp.config.oidc.defaultClientScopes,
      });
      return describeChange(app.kp, await updateClient(app.kp, client, revision, metadata));
    },
  );

  app.delete(
    '/register/:client_id',
    {
      schema: {
        tags: ['clients'],
        summary: 'Delete a client registration (RFC 7592) with its registration access token',
        security: registrationToken,
        params: clientParams,
        response: {
          200: { type: 'object', properties: { receipt: { type: 'string' } } },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { client_id: clientId } = request.params as { client_id: string };
      await authenticateRegistrationToken(app.kp, request.headers.authorization, clientId);
      const { receipt } = await deleteClient(app.kp, clientId);
      return receipt ? { receipt } : {};
    },
  );
}
