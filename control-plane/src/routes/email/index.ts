import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { KeyplaneError } from '#lib/errors/keyplane-error.js';
import { addEmail, checkVerificationLink, verifyEmail } from '../../email/addresses.js';
import { emailConfirmPage, emailVerifiedPage, linkRefusalPage } from '../../pages/link-pages.js';
import { requireSession } from '../../plugins/session.js';
import { isHtmlFormPost, wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField as receipt } from '../../http/schemas.js';

/**
 * Email addresses on the account. Adding one mails a verification link; opening the link marks
 * the address verified and does nothing else: it creates, merges and upgrades no session
 * (docs/accounts.md#e-mail-addresses), whoever opens it and whatever session that browser has.
 */
export default async function emailRoutes(app: FastifyInstance): Promise<void> {
  app.post(
    '/auth/email/add',
    {
      preHandler: requireSession,
      schema: {
        tags: ['accounts'],
        summary: 'Adds an email address to the account and mails it a verification link',
        security: [{ sessionCookie: [] }],
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: { email: { type: 'string', minLength: 3, maxLength: 254 } },
        },
        response: {
          200: okObject(
            {
              email: { type: 'string' },
              verified: { type: 'boolean' },
              sent: {
                type: 'boolean',
                description: 'Whether a verification mail went out (false when already verified).',
              },
              receipt,
            },
            ['email', 'verified', 'sent'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      ok: true,
      ...(await addEmail(app.kp, request.kp.session!.identityId, (request.body as { email: string }).email)),
    }),
  );

  /** A verification link that cannot be used: why, and the way back to the account's addresses. */
  const errorPage = (request: FastifyRequest, failure: KeyplaneError) =>
    linkRefusalPage({ request, reason: failure.reason, retryHref: '/account', retryLabel: 'link.retry_email' });

  app.get(
    '/auth/email/verify',
    {
      // A HEAD (link preview, scanner) must never consume a one-time link; nor does a GET.
      exposeHeadRoute: false,
      // The confirmation page posts back with the session cookie when the browser has one.
      config: { errorPage, sameOriginReferrer: true },
      schema: {
        tags: ['accounts'],
        summary:
          "The mailed link. Opened in a browser signed in to the account that added the address, it marks the address verified at once; otherwise it shows a confirmation page whose button POSTs to verify (mail scanners open links by GET without the account's session). JSON with Accept: application/json",
        querystring: { type: 'object', properties: { token: { type: 'string', maxLength: 200 } } },
        produces: ['text/html', 'application/json'],
        response: {
          200: okObject({
            verified: { type: 'boolean' },
            already: { type: 'boolean' },
            receipt,
            confirm: {
              type: 'string',
              description: 'When not verified: POST /auth/email/verify with {token} verifies.',
            },
          }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const token = (request.query as { token?: string }).token ?? '';
      const requester = (await checkVerificationLink(app.kp, token)).identityId;
      // The account's own signed-in browser proves the click is the owner's, which a scanner
      // fetching the link cannot: it verifies at once. Any other session, or none, gets the button.
      if (request.kp.session?.identityId === requester) {
        const result = await verifyEmail(app.kp, token);
        if (wantsJson(request)) return { ok: true, verified: true, ...result };
        reply.type('text/html; charset=utf-8');
        return emailVerifiedPage(request, result.already);
      }
      if (wantsJson(request)) return { ok: true, verified: false, confirm: 'POST /auth/email/verify' };
      reply.type('text/html; charset=utf-8');
      return emailConfirmPage(request, token);
    },
  );

  app.post(
    '/auth/email/verify',
    {
      config: { errorPage },
      schema: {
        tags: ['accounts'],
        summary:
          "Marks an address verified (the confirmation page's button, or JSON {token}); creates, merges or upgrades no session",
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: { type: 'object', required: ['token'], properties: { token: { type: 'string', maxLength: 200 } } },
        produces: ['text/html', 'application/json'],
        response: {
          200: okObject({ verified: { const: true }, already: { type: 'boolean' }, receipt }),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      const token = (request.body as { token: string }).token;
      const result = await verifyEmail(app.kp, token);
      if (!isHtmlFormPost(request)) return { ok: true, verified: true, ...result };
      reply.type('text/html; charset=utf-8');
      return emailVerifiedPage(request, result.already);
    },
  );
}
