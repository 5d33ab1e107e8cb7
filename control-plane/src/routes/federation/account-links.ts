import type { FastifyInstance } from 'fastify';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { browserOf, setSessionCookies } from '../../http/session-cookies.js';
import { requireSession } from '../../plugins/session.js';
import { accountPageAgain } from '../../pages/account-page.js';
import { confirmFederatedSignIn } from '../../federation/open-session.js';
import { confirmLink, linkOptions, startLink, unlinkConnection } from '../../federation/link-connection.js';
import { bindingCookie } from './binding-cookie.js';
import { federationRefusal, replaceQuestionPage } from './pages.js';

const connectionIdParam = {
  type: 'object',
  required: ['connectionId'],
  properties: { connectionId: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;
const linkId = { type: 'string', minLength: 1, maxLength: 64 } as const;
const session = [{ sessionCookie: [] }];

/**
 * The person's side of connections (docs/federation.md): the answer to "Continue as …?" before a
 * federated sign-in replaces another account's session, and linking a personal account to an
 * instance-wide connection from /account (Connect, the passkey that confirms it, Remove).
 */
export function accountLinkRoutes(app: FastifyInstance): void {
  const services = app.kp;

  app.post(
    '/federation/confirm',
    {
      schema: {
        tags: ['federation'],
        summary:
          "Answer the question asked before a sign-in through a connection replaces another account's session: continue (sign in) or cancel (keep the session)",
        consumes: ['application/x-www-form-urlencoded'],
        body: {
          type: 'object',
          required: ['confirm', 'decision'],
          properties: { confirm: linkId, decision: { enum: ['continue', 'cancel'] } },
        },
        response: { 303: { description: 'On to where the sign-in was going, or back to the account', type: 'null' } },
      },
      config: { errorPage: federationRefusal },
    },
    async (request, reply) => {
      const body = request.body as { confirm: string; decision: 'continue' | 'cancel' };
      const outcome = await confirmFederatedSignIn(services, {
        confirmId: body.confirm,
        decision: body.decision,
        bindingToken: bindingCookie.read(services, request),
        browser: browserOf(services, reply),
      });
      if (outcome.kind === 'cancelled') return reply.redirect('/account', 303);
      // The held result was for this very question: it never asks again.
      if (outcome.kind === 'confirm')
        return reply.type('text/html; charset=utf-8').send(replaceQuestionPage(request, outcome.question));
      setSessionCookies(services, reply, outcome.sessionToken);
      return reply.redirect(outcome.returnTo, 303);
    },
  );

  app.post(
    '/account/connections/:connectionId/connect',
    {
      onRequest: requireSession,
      schema: {
        tags: ['federation'],
        summary:
          'Connect: link an instance-wide connection to this personal account; the browser signs in upstream, then confirms the identity with a passkey',
        security: session,
        params: connectionIdParam,
        response: { 303: { description: "To the identity provider's sign-in", type: 'null' }, ...errorResponses },
      },
      config: { errorPage: accountPageAgain },
    },
    async (request, reply) => {
      const location = await startLink(
        services,
        request.kp.session!,
        (request.params as { connectionId: string }).connectionId,
        bindingCookie.ensure(services, request, reply),
      );
      return reply.redirect(location, 303);
    },
  );

  app.post(
    '/account/connections/:connectionId/remove',
    {
      onRequest: requireSession,
      schema: {
        tags: ['federation'],
        summary: "Remove this account's link to a connection",
        security: session,
        params: connectionIdParam,
        response: { 303: { description: 'Back to the account', type: 'null' }, ...errorResponses },
      },
      config: { errorPage: accountPageAgain },
    },
    async (request, reply) => {
      await unlinkConnection(services, request.kp.session!, (request.params as { connectionId: string }).connectionId);
      return reply.redirect('/account', 303);
    },
  );

  app.post(
    '/account/connections/link/options',
    {
      onRequest: requireSession,
      schema: {
        tags: ['federation'],
        summary: "Begin the passkey confirmation of a held link: request options limited to this account's passkeys",
        security: session,
        body: { type: 'object', required: ['link'], properties: { link: linkId } },
        response: {
          200: okObject({ options: { type: 'object', additionalProperties: true } }, ['options']),
          ...errorResponses,
        },
      },
      config: { errorPage: false },
    },
    async (request) => ({
      ok: true,
      options: await linkOptions(services, request.kp.session!, (request.body as { link: string }).link),
    }),
  );

  app.post(
    '/account/connections/link/verify',
    {
      onRequest: requireSession,
      schema: {
        tags: ['federation'],
        summary: 'Confirm a held link with the passkey assertion: links the upstream identity (federation.linked)',
        security: session,
        body: { type: 'object', required: ['link', 'response'], properties: { link: linkId, response: {} } },
        response: { 200: okObject({ receipt: receiptField }), ...errorResponses },
      },
      config: { errorPage: false },
    },
    async (request) => {
      const body = request.body as { link: string; response: unknown };
      return { ok: true, ...(await confirmLink(services, request.kp.session!, body.link, body.response)) };
    },
  );
}
