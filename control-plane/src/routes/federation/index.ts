import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { validateReturnUrl } from '#lib/http/return-url.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { registerOwnerScopes, type OwnerScope } from '../owner-scopes.js';
import { loadMembership } from '../../orgs/membership.js';
import { browserOf } from '../../http/session-cookies.js';
import {
  connectionJwks,
  connectionView,
  createConnection,
  discoverConnection,
  deleteConnection,
  listConnections,
  ownedConnection,
  updateConnection,
  type ConnectionInput,
} from '../../federation/connections.js';
import {
  beginPendingSignIn,
  finishFederatedSignIn,
  startConnectionTest,
  startFederatedSignIn,
  startHref,
} from '../../federation/federated-sign-in.js';
import { acceptBackchannelLogout, continueAfterUpstreamLogout } from '../../federation/upstream-logout.js';
import { sendAfterLogout } from '../oidc/logout.js';
import { bindingCookie } from './binding-cookie.js';
import { CredentialLimits } from '../../passkeys/ceremony.js';
import { federationRefusal } from './pages.js';
import { accountLinkRoutes } from './account-links.js';
import { connectionBody, connectionSchema } from './schemas.js';
import { samlRoutes } from './saml.js';
import { answerSignIn } from './answer.js';

const connectionIdParam = { connectionId: { type: 'string', minLength: 1, maxLength: 100 } } as const;

/** The same routes for the operator's instance-wide connections and for an org's. */
function connectionRoutes(app: FastifyInstance, scope: OwnerScope): void {
  const services = app.kp;
  const { issuer } = services.config;
  const { prefix, tag, security } = scope;
  const schema = (summary: string, more: Record<string, unknown>) => ({ tags: [tag], summary, security, ...more });
  const idOf = (request: FastifyRequest) => (request.params as { connectionId: string }).connectionId;
  const collection = Object.keys(scope.params).length
    ? { params: { type: 'object', required: Object.keys(scope.params), properties: scope.params } }
    : {};
  const one = {
    type: 'object',
    required: ['connectionId', ...Object.keys(scope.params)],
    properties: { ...connectionIdParam, ...scope.params },
  };

  app.post(
    prefix,
    {
      schema: schema(
        'Add a connection (an upstream identity provider); answers its redirect_uri (and jwks_uri for private_key_jwt; sp_entity_id, acs_url and sp_metadata_url for SAML) to register upstream',
        {
          ...collection,
          body: { ...connectionBody, required: ['type', 'name'] },
          response: {
            201: okObject(
              {
                connectionId: { type: 'string' },
                redirect_uri: { type: 'string' },
                jwks_uri: { type: 'string' },
                sp_entity_id: { type: 'string' },
                acs_url: { type: 'string' },
                sp_metadata_url: { type: 'string' },
                connection: connectionSchema,
                receipt: receiptField,
              },
              ['connectionId', 'redirect_uri'],
            ),
            ...errorResponses,
          },
        },
      ),
    },
    async (request, reply) => {
      const { connection, receipt } = await createConnection(
        services,
        await scope.owner(request, true),
        request.body as ConnectionInput,
      );
      const view = connectionView(issuer, connection);
      reply.code(201);
      return {
        ok: true,
        connectionId: connection.connectionId,
        redirect_uri: view.redirect_uri,
        ...(view.jwks_uri !== undefined ? { jwks_uri: view.jwks_uri } : {}),
        ...(view.sp_entity_id !== undefined
          ? { sp_entity_id: view.sp_entity_id, acs_url: view.acs_url, sp_metadata_url: view.sp_metadata_url }
          : {}),
        connection: view,
        ...(receipt ? { receipt } : {}),
      };
    },
  );
  app.get(
    prefix,
    {
      schema: schema('List connections (never their secrets)', {
        ...collection,
        response: {
          200: okObject({ connections: { type: 'array', items: connectionSchema } }, ['connections']),
          ...errorResponses,
        },
      }),
    },
    async (request) => ({
      ok: true,
      connections: (await listConnections(services, await scope.owner(request, false))).map((c) =>
        connectionView(issuer, c),
      ),
    }),
  );
  app.get(
    `${prefix}/:connectionId`,
    {
      schema: schema('One connection (never its secret)', {
        params: one,
        response: { 200: okObject(connectionSchema.properties, [...connectionSchema.required]), ...errorResponses },
      }),
    },
    async (request) => ({
      ok: true,
      ...connectionView(issuer, await ownedConnection(services, await scope.owner(request, false), idOf(request))),
    }),
  );
  app.put(
    `${prefix}/:connectionId`,
    {
      schema: schema('Change the name, client secret, scopes, domains, JIT, required or maximum assurance', {
        params: one,
        body: connectionBody,
        response: {
          200: okObject({ ...connectionSchema.properties, receipt: receiptField }, [...connectionSchema.required]),
          ...errorResponses,
        },
      }),
    },
    async (request) => {
      const { connection, receipt } = await updateConnection(
        services,
        await scope.owner(request, true),
        idOf(request),
        request.body as ConnectionInput,
      );
      return { ok: true, ...connectionView(issuer, connection), ...(receipt ? { receipt } : {}) };
    },
  );
  app.delete(
    `${prefix}/:connectionId`,
    {
      schema: schema('Remove a connection and its links (the accounts it created stay with the org)', {
        params: one,
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      }),
    },
    async (request) => ({
      ok: true,
      ...(await deleteConnection(services, await scope.owner(request, true), idOf(request))),
    }),
  );
}

/**
 * Connections (docs/federation.md): the operator's at `/admin/connections`, an org's at
 * `/org/{slug}/connections` (its owners; a change at `sensitive`), and the browser's way through
 * one: start, callback, the connection's JWKS, and home-realm discovery.
 */
export default async function federationRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  // Unauthenticated paths that reach an upstream or write shared state: per client IP, as the credential paths.
  const limits = new CredentialLimits(services);
  await registerOwnerScopes(app, 'connections', connectionRoutes, (orgs) => {
    // GET as a link from the connection's page, POST as a form or an API call: both start the test.
    orgs.route({
      method: ['GET', 'POST'],
      url: '/org/:slug/connections/:connectionId/test',
      schema: {
        tags: ['orgs'],
        summary:
          'Test this connection (owners): sign in upstream and see the claims received; creates no session, account or link',
        security: [{ sessionCookie: [] }],
        params: {
          type: 'object',
          required: ['slug', 'connectionId'],
          properties: { slug: { type: 'string', maxLength: 64 }, ...connectionIdParam },
        },
        response: {
          303: { description: "To the identity provider's sign-in; it comes back to the callback", type: 'null' },
          ...errorResponses,
        },
      },
      handler: async (request, reply) => {
        const session = request.kp.session!;
        const { slug, connectionId } = request.params as { slug: string; connectionId: string };
        const { org } = await loadMembership(services, slug, session.identityId, 'owner');
        const connection = await ownedConnection(services, { orgId: org.orgId }, connectionId);
        const location = await startConnectionTest(
          services,
          connection,
          session.identityId,
          bindingCookie.ensure(services, request, reply),
        );
        return reply.redirect(location, 303);
      },
    });
  });

  accountLinkRoutes(app);

  const signInPage = (reply: FastifyReply, connectionId: string) =>
    reply.redirect(`/auth?connection=${encodeURIComponent(connectionId)}`, 303);

  app.get(
    '/federation/:connectionId/start',
    {
      schema: {
        tags: ['federation'],
        summary:
          "Start a sign-in at the connection's identity provider, for a pending sign-in of this browser (else the sign-in page)",
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
        querystring: { type: 'object', properties: { request: { type: 'string', maxLength: 64 } } },
      },
      config: { errorPage: federationRefusal },
    },
    async (request, reply) => {
      await limits.perIp(request, 'federation-start');
      const { connectionId } = request.params as { connectionId: string };
      const location = await startFederatedSignIn(
        services,
        connectionId,
        (request.query as { request?: string }).request,
        bindingCookie.read(services, request),
      );
      if (location === null) return signInPage(reply, connectionId);
      return reply.redirect(location, 303);
    },
  );

  app.get(
    '/federation/:connectionId/callback',
    {
      schema: {
        tags: ['federation'],
        summary:
          'Where the identity provider sends the browser back (code, state, RFC 9207 iss); a refusal is a page naming the reason',
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
      },
      config: { errorPage: federationRefusal },
    },
    async (request, reply) => {
      await limits.perIp(request, 'federation-callback');
      const { connectionId } = request.params as { connectionId: string };
      const url = new URL(request.url, services.config.issuer);
      const signedIn = await finishFederatedSignIn(services, connectionId, {
        url: new URL(`${url.pathname}${url.search}`, services.config.issuer),
        bindingToken: bindingCookie.read(services, request),
        browser: browserOf(services, reply),
      });
      return answerSignIn(services, request, reply, signedIn);
    },
  );

  samlRoutes(app, limits);

  app.post(
    '/federation/:connectionId/backchannel-logout',
    {
      schema: {
        tags: ['federation'],
        summary:
          "The identity provider's back-channel logout (OpenID Connect Back-Channel Logout 1.0): ends the sessions its upstream session started",
        consumes: ['application/x-www-form-urlencoded'],
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
        body: {
          type: 'object',
          required: ['logout_token'],
          properties: { logout_token: { type: 'string', minLength: 1, maxLength: 16384 } },
        },
        response: { 200: okObject({ ended: { type: 'integer' } }, ['ended']), ...errorResponses },
      },
      // §2.8: a refusal is 400 with an OAuth error; never cached.
      config: { oauthErrors: true, errorPage: false },
    },
    async (request) => {
      await limits.perIp(request, 'federation-logout');
      const { connectionId } = request.params as { connectionId: string };
      const { logout_token } = request.body as { logout_token: string };
      return { ok: true, ...(await acceptBackchannelLogout(services, connectionId, logout_token)) };
    },
  );

  app.get(
    '/federation/:connectionId/logged-out',
    {
      schema: {
        tags: ['federation'],
        summary:
          'Where the identity provider sends the browser back after its logout; goes on to the app or the signed-out page',
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
        querystring: { type: 'object', properties: { state: { type: 'string', maxLength: 64 } } },
      },
      config: { errorPage: federationRefusal },
    },
    async (request, reply) => {
      const { connectionId } = request.params as { connectionId: string };
      const then = await continueAfterUpstreamLogout(
        services,
        connectionId,
        (request.query as { state?: string }).state,
      );
      return sendAfterLogout(request, reply, then ?? { redirect: '/auth?done=signed-out' });
    },
  );

  app.get(
    '/federation/:connectionId/jwks',
    {
      schema: {
        tags: ['federation'],
        summary: "The connection's public key for private_key_jwt (RFC 7523), to register at the identity provider",
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
      },
      config: { cache: 'public, max-age=300', errorPage: false },
    },
    async (request) => {
      const { connectionId } = request.params as { connectionId: string };
      return connectionJwks(services, connectionId);
    },
  );

  app.post(
    '/auth/discover',
    {
      schema: {
        tags: ['federation'],
        summary:
          "Home-realm discovery: the connection an address's domain signs in through, decided by the domain alone (never by whether an account exists)",
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: { email: { type: 'string', maxLength: 254 }, return: { type: 'string', maxLength: 2048 } },
        },
        response: {
          200: okObject(
            {
              connection: {
                anyOf: [
                  { type: 'null' },
                  {
                    type: 'object',
                    required: ['connectionId', 'name'],
                    properties: { connectionId: { type: 'string' }, name: { type: 'string' } },
                  },
                ],
              },
              start: { type: 'string', description: 'The start link of a pending sign-in made for this browser' },
            },
            ['connection'],
          ),
          ...errorResponses,
        },
      },
      config: { errorPage: false },
    },
    async (request, reply) => {
      await limits.perIp(request, 'discover');
      const body = request.body as { email: string; return?: string };
      const connection = await discoverConnection(services, body.email);
      if (!connection) return { ok: true, connection: null };
      const returnTo = validateReturnUrl(body.return, services.config.issuer) ?? '/account';
      const pending = await beginPendingSignIn(services, bindingCookie.ensure(services, request, reply), returnTo);
      return {
        ok: true,
        connection,
        start: startHref(connection.connectionId, pending),
      };
    },
  );
}
