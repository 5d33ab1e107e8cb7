import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { SECOND_FACTOR_JS } from '../../pages/scripts/second-factor.js';
import { requireSession } from '../../plugins/session.js';
import { errorResponses, okObject, receiptField as receipt } from '../../http/schemas.js';
import { confirmTotp, disableTotp, startTotpSetup } from '../../totp/setup.js';

const security = [{ sessionCookie: [] }];

/**
 * Turning TOTP off needs a fresh session: `sensitive` (a step-up within `lifetimes.stepUp`, which
 * itself required the TOTP code), or a recovery-code sign-in within that same window — the way
 * out for someone who lost the authenticator app. A plain passkey or magic-link session cannot
 * remove the factor that guards `sensitive`.
 */
async function requireFreshForDisable(this: FastifyInstance, request: FastifyRequest): Promise<void> {
  const session = request.kp.session!;
  const windowMs = this.kp.config.lifetimes.stepUp * 1000;
  if (session.assurance === 'sensitive') return;
  if (session.assurance === 'recovery' && this.kp.now() - session.authTime <= windowMs) return;
  throw fail(
    'insufficient_assurance',
    'turning TOTP off needs a fresh step-up (passkey and TOTP code) at /auth/step-up, or a recovery-code sign-in in the last minutes',
    {
      fields: { required: 'sensitive', stepUp: '/auth/step-up' },
    },
  );
}

/** TOTP for step-up (RFC 6238): setup leaves it pending, a 6-digit code confirms it, disable removes it. */
export default async function totpRoutes(app: FastifyInstance): Promise<void> {
  // The account page's TOTP, backup-code and e-mail sections (see accounts/account-sections.ts).
  app.get(
    '/assets/second-factor.js',
    {
      config: { cache: 'no-cache' },
      schema: {
        tags: ['pages'],
        summary: 'Page script (ES module) for the TOTP, backup-code and e-mail sections of /account',
        produces: ['text/javascript'],
      },
    },
    async (_request, reply) => {
      reply.type('text/javascript; charset=utf-8');
      return SECOND_FACTOR_JS;
    },
  );

  app.post(
    '/auth/totp/setup',
    {
      preHandler: requireSession,
      schema: {
        tags: ['accounts'],
        summary: 'Starts TOTP setup: a new secret, its otpauth URI and QR code; TOTP stays pending until confirmed',
        security,
        response: {
          200: okObject(
            {
              secret: { type: 'string', description: 'Base32 secret, for apps that cannot scan.' },
              uri: { type: 'string', description: 'otpauth://totp/… Key URI.' },
              qrSvg: { type: 'string', description: 'The URI as an SVG QR code.' },
              totp: { const: 'pending' },
            },
            ['secret', 'uri', 'qrSvg'],
          ),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      ok: true,
      ...(await startTotpSetup(app.kp, request.kp.session!.identityId)),
      totp: 'pending',
    }),
  );

  app.post(
    '/auth/totp/confirm',
    {
      preHandler: requireSession,
      schema: {
        tags: ['accounts'],
        summary: 'Activates a pending TOTP setup with a current 6-digit code',
        security,
        body: {
          type: 'object',
          required: ['code'],
          additionalProperties: false,
          properties: {
            code: { type: 'string', pattern: '^[0-9]{6}$', description: 'The 6-digit code the app shows now.' },
          },
        },
        response: { 200: okObject({ totp: { const: 'active' }, receipt }, ['totp']), ...errorResponses },
      },
    },
    async (request) => {
      const session = request.kp.session!;
      const result = await confirmTotp(
        app.kp,
        { identityId: session.identityId, sessionId: session.id },
        (request.body as { code: string }).code,
      );
      return { ok: true, totp: 'active', ...result };
    },
  );

  app.post(
    '/auth/totp/disable',
    {
      preHandler: [requireSession, requireFreshForDisable],
      schema: {
        tags: ['accounts'],
        summary:
          'Turns TOTP off (or cancels a pending setup). Needs a fresh session: `sensitive`, or a recovery-code sign-in within the step-up window',
        security,
        response: { 200: okObject({ totp: { const: 'off' }, receipt }, ['totp']), ...errorResponses },
      },
    },
    async (request) => {
      const session = request.kp.session!;
      return {
        ok: true,
        totp: 'off',
        ...(await disableTotp(app.kp, { identityId: session.identityId, sessionId: session.id })),
      };
    },
  );
}
