import type { FastifyInstance } from 'fastify';
import { beginEnrolment, checkEnrolment, finishEnrolment } from '../../passkeys/enrolment.js';
import { CredentialLimits } from '../../passkeys/ceremony.js';
import { linkRefusalPage, enrolmentPage } from '../../pages/link-pages.js';
import { checkSignInOrigin } from '../../plugins/session.js';
import { browserOf, setSessionCookies } from '../../http/session-cookies.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';

const token = { type: 'string', maxLength: 200 };

/**
 * Passkey enrolment links of provisioned accounts (docs/scim.md#enrolment-links): the page the
 * mailed link opens, and the ceremony it runs. The link is used up only by a verified passkey.
 */
export default async function enrolmentRoutes(app: FastifyInstance, options: { home: string }): Promise<void> {
  const services = app.kp;
  const limits = new CredentialLimits(services);

  app.get(
    '/auth/enrol',
    {
      // A HEAD (link preview, scanner) never reaches the handler; the GET itself uses nothing up.
      exposeHeadRoute: false,
      config: {
        errorPage: async (request, failure) => linkRefusalPage({ request, reason: failure.reason }),
      },
      schema: {
        tags: ['passkeys'],
        summary: "HTML page: create a provisioned account's passkey from its mailed enrolment link",
        produces: ['text/html'],
        querystring: { type: 'object', properties: { token } },
        response: { ...errorResponses },
      },
    },
    async (request, reply) => {
      const { token: value = '' } = request.query as { token?: string };
      await limits.perIp(request, 'enrol');
      const { identity, orgName } = await checkEnrolment(services, value);
      reply.type('text/html; charset=utf-8');
      return enrolmentPage(request, { token: value, org: orgName, account: identity.displayName || identity.username });
    },
  );

  app.post(
    '/auth/enrol/options',
    {
      schema: {
        tags: ['passkeys'],
        summary: 'Begin creating the passkey of a provisioned account: creation options bound to the enrolment link',
        body: { type: 'object', required: ['token'], properties: { token } },
        response: {
          200: okObject({ options: { type: 'object', additionalProperties: true } }, ['options']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      checkSignInOrigin(services, request);
      await limits.perIp(request, 'enrol');
      const body = request.body as { token: string };
      return { ok: true, options: await beginEnrolment(services, body.token) };
    },
  );

  app.post(
    '/auth/enrol/verify',
    {
      schema: {
        tags: ['passkeys'],
        summary: 'Finish: stores the passkey, uses the link up and signs in (sets the session cookie)',
        body: { type: 'object', required: ['token', 'response'], properties: { token, response: {} } },
        response: {
          200: okObject({ identityId: { type: 'string' }, home: { type: 'string' }, receipt: receiptField }, [
            'identityId',
            'home',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      checkSignInOrigin(services, request);
      await limits.perIp(request, 'enrol');
      const body = request.body as { token: string; response: unknown };
      const { identityId, session, receipt } = await finishEnrolment(services, body, browserOf(app.kp, reply));
      setSessionCookies(app.kp, reply, session.token);
      return { ok: true, identityId, home: options.home, ...(receipt ? { receipt } : {}) };
    },
  );
}
