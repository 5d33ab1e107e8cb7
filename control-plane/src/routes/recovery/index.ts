import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { recoveryFormPage } from '../../pages/link-pages.js';
import { checkSignInOrigin, requireSession } from '../../plugins/session.js';
import { regenerateRecoveryCodes, signInWithRecoveryCode } from '../../recovery/codes.js';
import { browserOf, setSessionCookies } from '../../http/session-cookies.js';
import { limitPerIp } from '../../http/code-guard.js';
import { isHtmlFormPost } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField as receipt } from '../../http/schemas.js';

/** Backup codes: ten shown once, stored as keyed hashes, each signs in once at assurance `recovery`. */
export default async function recoveryRoutes(app: FastifyInstance): Promise<void> {
  app.post(
    '/auth/recovery/regenerate',
    {
      preHandler: requireSession,
      schema: {
        tags: ['accounts'],
        summary: 'Replaces the backup codes with 10 new ones, shown this once (only their hashes are kept)',
        security: [{ sessionCookie: [] }],
        response: {
          200: okObject({ codes: { type: 'array', items: { type: 'string' }, minItems: 10, maxItems: 10 }, receipt }, [
            'codes',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const session = request.kp.session!;
      return {
        ok: true,
        ...(await regenerateRecoveryCodes(app.kp, { identityId: session.identityId, sessionId: session.id })),
      };
    },
  );

  app.post(
    '/auth/recovery/verify',
    {
      // The no-JavaScript form: a refusal shows the form again, with the account name and the reason.
      config: {
        errorPage: (request, failure) => {
          const user = (request.body as { user?: unknown } | undefined)?.user;
          return recoveryFormPage(request, { user: typeof user === 'string' ? user : '', reason: failure.reason });
        },
      },
      schema: {
        tags: ['accounts'],
        summary:
          'Signs in with one backup code (consumed) at assurance `recovery`; 5 failures lock the method for 15 minutes',
        body: {
          type: 'object',
          required: ['user', 'code'],
          additionalProperties: false,
          properties: {
            user: {
              type: 'string',
              minLength: 1,
              maxLength: 64,
              description: 'Username or a previous username (alias).',
            },
            code: {
              type: 'string',
              minLength: 1,
              maxLength: 64,
              description: 'One backup code; case, spaces and dashes do not matter.',
            },
          },
        },
        response: {
          200: okObject(
            {
              identityId: { type: 'string' },
              home: { type: 'string' },
              remaining: { type: 'integer', description: 'Unused backup codes left after this one.' },
              receipt,
            },
            ['identityId', 'home', 'remaining'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      if (!isHtmlFormPost(request)) return verify(request, reply);
      // The no-JavaScript form: success lands on the account page.
      await verify(request, reply);
      return reply.redirect('/account', 303);
    },
  );

  app.get(
    '/auth/recovery',
    {
      schema: {
        tags: ['accounts'],
        summary: 'HTML page: sign in with a backup code (a plain form, no JavaScript needed)',
        produces: ['text/html'],
      },
    },
    async (request, reply) => {
      reply.type('text/html; charset=utf-8');
      return recoveryFormPage(request);
    },
  );

  async function verify(request: FastifyRequest, reply: FastifyReply) {
    checkSignInOrigin(app.kp, request);
    await limitPerIp(app.kp, request, 'recovery-verify');
    const { user, code } = request.body as { user: string; code: string };
    const { sessionToken, ...signedIn } = await signInWithRecoveryCode(
      app.kp,
      user,
      code,
      browserOf(app.kp, reply),
      request.ip,
    );
    setSessionCookies(app.kp, reply, sessionToken);
    return {
      ok: true,
      identityId: signedIn.identityId,
      home: '/account',
      remaining: signedIn.remaining,
      ...(signedIn.receipt ? { receipt: signedIn.receipt } : {}),
    };
  }
}
