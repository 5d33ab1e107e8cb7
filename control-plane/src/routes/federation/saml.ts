import type { FastifyInstance } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { browserOf } from '../../http/session-cookies.js';
import type { CredentialLimits } from '../../passkeys/ceremony.js';
import { acceptSamlResponse, continueSamlSignIn } from '../../federation/saml-sign-in.js';
import { spMetadataOf } from '../../federation/saml-upstream.js';
import { continueAfterUpstreamLogout } from '../../federation/upstream-logout.js';
import { sendAfterLogout } from '../oidc/logout.js';
import { bindingCookie } from './binding-cookie.js';
import { federationRefusal } from './pages.js';
import { answerSignIn } from './answer.js';

const connectionIdParam = { connectionId: { type: 'string', minLength: 1, maxLength: 100 } } as const;

/**
 * A SAML connection's service provider endpoints (docs/federation.md#saml-connections): its
 * metadata, the ACS the IdP posts its Response to, `continue` where the browser's own cookies
 * finish the sign-in, and the SingleLogoutService the IdP answers a LogoutRequest at.
 */
export function samlRoutes(app: FastifyInstance, limits: CredentialLimits): void {
  const services = app.kp;
  app.get(
    '/federation/:connectionId/saml/metadata',
    {
      schema: {
        tags: ['federation'],
        summary: "A SAML connection's service provider metadata (entityID, ACS, signing certificate), to give the IdP",
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
      },
      config: { cache: 'public, max-age=300', errorPage: false },
    },
    async (request, reply) => {
      const { connectionId } = request.params as { connectionId: string };
      const xml = await spMetadataOf(services, connectionId);
      if (xml === null) throw fail('not_found', 'no such SAML connection');
      reply.type('application/samlmetadata+xml; charset=utf-8');
      return xml;
    },
  );

  app.post(
    '/federation/:connectionId/saml/acs',
    {
      schema: {
        tags: ['federation'],
        summary:
          "The SAML AssertionConsumerService (HTTP-POST): verifies the IdP's Response, then sends the browser on to continue; a refusal is a page naming the reason",
        consumes: ['application/x-www-form-urlencoded'],
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
        body: {
          type: 'object',
          required: ['SAMLResponse'],
          properties: {
            SAMLResponse: { type: 'string', minLength: 1, maxLength: 524288 },
            RelayState: { type: 'string', maxLength: 2048 },
          },
        },
        response: { 303: { description: 'To continue, in the browser that started the sign-in', type: 'null' } },
      },
      // The IdP's page posts here cross-site, as saml-bindings-2.0 §3.5 has it: what binds the
      // answer to a browser is checked at continue, where its own cookies arrive.
      config: { errorPage: federationRefusal, checksOwnOrigin: true },
    },
    async (request, reply) => {
      await limits.perIp(request, 'federation-callback');
      const { connectionId } = request.params as { connectionId: string };
      const { SAMLResponse } = request.body as { SAMLResponse: string };
      const outcome = await acceptSamlResponse(services, connectionId, SAMLResponse);
      return reply.redirect(outcome.location, 303);
    },
  );

  app.get(
    '/federation/:connectionId/continue',
    {
      schema: {
        tags: ['federation'],
        summary:
          'Where a verified SAML response finishes, in the browser that started the sign-in; a refusal is a page naming the reason',
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
        querystring: { type: 'object', properties: { result: { type: 'string', maxLength: 64 } } },
      },
      config: { errorPage: federationRefusal },
    },
    async (request, reply) => {
      await limits.perIp(request, 'federation-callback');
      const { connectionId } = request.params as { connectionId: string };
      const signedIn = await continueSamlSignIn(services, connectionId, {
        resultId: (request.query as { result?: string }).result,
        bindingToken: bindingCookie.read(services, request),
        browser: browserOf(services, reply),
      });
      return answerSignIn(services, request, reply, signedIn);
    },
  );

  app.get(
    '/federation/:connectionId/saml/slo',
    {
      schema: {
        tags: ['federation'],
        summary:
          "Where a SAML IdP sends its LogoutResponse (HTTP-Redirect) after Keyplane's LogoutRequest; goes on to the app or the signed-out page",
        params: { type: 'object', required: ['connectionId'], properties: connectionIdParam },
        querystring: {
          type: 'object',
          properties: {
            SAMLResponse: { type: 'string', maxLength: 65536 },
            RelayState: { type: 'string', maxLength: 64 },
            SigAlg: { type: 'string', maxLength: 256 },
            Signature: { type: 'string', maxLength: 4096 },
          },
        },
      },
      config: { errorPage: federationRefusal },
    },
    async (request, reply) => {
      const { connectionId } = request.params as { connectionId: string };
      // The session ended here before the browser went to the IdP: the answer only says where to go on.
      const then = await continueAfterUpstreamLogout(
        services,
        connectionId,
        (request.query as { RelayState?: string }).RelayState,
      );
      return sendAfterLogout(request, reply, then ?? { redirect: '/auth?done=signed-out' });
    },
  );
}
