import type { FastifyInstance, FastifyRequest } from 'fastify';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { buildTotpUri, generateTotpSecret, renderTotpQrSvg } from '../../../../lib/totp/totp.js';
import { SECOND_FACTOR_JS } from '../../pages/scripts/second-factor.js';
import { requireSession } from '../../plugins/session.js';
import { errorResponses, okObject, receiptField as receipt } from '../../http/schemas.js';
import { checkTotpCode, totpSealContext } from '../../totp/secret.js';

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
  throw fail('insufficient_assurance', 'turning TOTP off needs a fresh step-up (passkey and TOTP code) at /auth/step-up, or a recovery-code sign-in in the last minutes', {
    fields: { required: 'sensitive', stepUp: '/auth/step-up' },
  });
}

/** TOTP for step-up (RFC 6238): setup leaves it pending, a 6-digit code confirms it, disable removes it. */
export default async function totpRoutes(app: FastifyInstance): Promise<void> {
  // The account page's TOTP, backup-code and e-mail sections (see routes/account/extras.ts).
  app.get('/assets/second-factor.js', {
    config: { cache: 'no-cache' },
    schema: { tags: ['pages'], summary: 'Page script (ES module) for the TOTP, backup-code and e-mail sections of /account', produces: ['text/javascript'] },
  }, async (_request, reply) => {
    reply.type('text/javascript; charset=utf-8');
    return SECOND_FACTOR_JS;
  });

  app.post('/auth/totp/setup', {
    preHandler: requireSession,
    schema: {
      tags: ['accounts'], summary: 'Starts TOTP setup: a new secret, its otpauth URI and QR code; TOTP stays pending until confirmed', security,
      response: {
        200: okObject({
          secret: { type: 'string', description: 'Base32 secret, for apps that cannot scan.' },
          uri: { type: 'string', description: 'otpauth://totp/… Key URI.' },
          qrSvg: { type: 'string', description: 'The URI as an SVG QR code.' },
          totp: { const: 'pending' },
        }, ['secret', 'uri', 'qrSvg']),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const session = request.kp.session!;
    const identity = await app.kp.storage.identities.get(session.identityId);
    if (!identity) throw fail('unauthorized', 'sign in first');
    const { base32 } = generateTotpSecret();
    const stored = await app.kp.storage.totp.putPending({
      identityId: identity.identityId,
      state: 'pending',
      sealedSecret: app.kp.secrets.seal(totpSealContext(identity.identityId), base32),
      lastUsedStep: null,
      createdAt: app.kp.now(),
      activatedAt: null,
    });
    if (!stored) throw fail('totp_already_active', 'TOTP is on already; turn it off before setting up a new secret');
    const issuer = new URL(app.kp.config.issuer).host;
    const uri = buildTotpUri(base32, { issuer: `Keyplane (${issuer})`, accountName: identity.username });
    return { ok: true, secret: base32, uri, qrSvg: await renderTotpQrSvg(uri), totp: 'pending' };
  });

  app.post('/auth/totp/confirm', {
    preHandler: requireSession,
    schema: {
      tags: ['accounts'], summary: 'Activates a pending TOTP setup with a current 6-digit code', security,
      body: {
        type: 'object', required: ['code'], additionalProperties: false,
        properties: { code: { type: 'string', pattern: '^[0-9]{6}$', description: 'The 6-digit code the app shows now.' } },
      },
      response: { 200: okObject({ totp: { const: 'active' }, receipt }, ['totp']), ...errorResponses },
    },
  }, async (request) => {
    const session = request.kp.session!;
    const { code } = request.body as { code: string };
    const record = await app.kp.storage.totp.get(session.identityId);
    if (!record || record.state !== 'pending') {
      throw record ? fail('totp_already_active', 'TOTP is on already') : fail('totp_not_pending', 'start with /auth/totp/setup');
    }
    const step = await checkTotpCode(app.kp, record, code);
    const at = app.kp.now();
    const result = await app.kp.storage.transaction(async (tx) => {
      if (!(await tx.totp.activate(session.identityId, step, at))) throw fail('totp_not_pending', 'the setup changed meanwhile; start again');
      return app.kp.events.record(tx, { type: 'totp.enabled', at, outcome: 'success', identityId: session.identityId, sessionId: session.id });
    });
    return { ok: true, totp: 'active', ...result };
  });

  app.post('/auth/totp/disable', {
    preHandler: [requireSession, requireFreshForDisable],
    schema: {
      tags: ['accounts'],
      summary: 'Turns TOTP off (or cancels a pending setup). Needs a fresh session: `sensitive`, or a recovery-code sign-in within the step-up window',
      security,
      response: { 200: okObject({ totp: { const: 'off' }, receipt }, ['totp']), ...errorResponses },
    },
  }, async (request) => {
    const session = request.kp.session!;
    const at = app.kp.now();
    const result = await app.kp.storage.transaction(async (tx) => {
      const record = await tx.totp.get(session.identityId);
      if (!record) throw fail('totp_not_active', 'TOTP is off already');
      await tx.totp.remove(session.identityId);
      if (record.state !== 'active') return {};
      return app.kp.events.record(tx, { type: 'totp.disabled', at, outcome: 'success', identityId: session.identityId, sessionId: session.id });
    });
    return { ok: true, totp: 'off', ...result };
  });
}
