import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { foldUsername } from '../../../../lib/accounts/username.js';
import { fail, isKeyplaneError } from '../../../../lib/errors/keyplane-error.js';
import { generateRecoveryCodes, hashRecoveryCode, matchRecoveryCode, normalizeRecoveryCode } from '../../../../lib/recovery/recovery-codes.js';
import { randomId } from '../../../../lib/util/random.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import { recoveryFormPage } from '../../pages/link-pages.js';
import { checkSignInOrigin, requireSession } from '../../plugins/session.js';
import { startSession } from '../../sessions/start-session.js';
import { assertNotLocked, limitPerAccount, limitPerIp, recordCodeFailure, recordCodeSuccess } from '../../http/code-guard.js';
import { isHtmlFormPost } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField as receipt } from '../../http/schemas.js';

/** The HMAC key for recovery-code hashes, derived from the master key for this purpose only. */
const MAC_PURPOSE = 'recovery-code';
/** RFC 8176: a recovery code is a one-time password. */
const RECOVERY_AMR = ['otp'];

/** Backup codes: ten shown once, stored as keyed hashes, each signs in once at assurance `recovery`. */
export default async function recoveryRoutes(app: FastifyInstance): Promise<void> {
  const macKey = app.kp.secrets.macKey(MAC_PURPOSE);

  app.post('/auth/recovery/regenerate', {
    preHandler: requireSession,
    schema: {
      tags: ['accounts'], summary: 'Replaces the backup codes with 10 new ones, shown this once (only their hashes are kept)',
      security: [{ sessionCookie: [] }],
      response: {
        200: okObject({ codes: { type: 'array', items: { type: 'string' }, minItems: 10, maxItems: 10 }, receipt }, ['codes']),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const session = request.kp.session!;
    const codes = generateRecoveryCodes();
    const at = app.kp.now();
    const hashed = codes.map((code) => ({ codeId: randomId('rc', 8), codeHash: hashRecoveryCode(macKey, normalizeRecoveryCode(code)!) }));
    const result = await app.kp.storage.transaction(async (tx) => {
      await tx.recoveryCodes.replace(session.identityId, hashed, at);
      return app.kp.events.record(tx, { type: 'recovery.regenerated', at, outcome: 'success', identityId: session.identityId, sessionId: session.id, count: codes.length });
    });
    return { ok: true, codes, ...result };
  });

  app.post('/auth/recovery/verify', {
    schema: {
      tags: ['accounts'],
      summary: 'Signs in with one backup code (consumed) at assurance `recovery`; 5 failures lock the method for 15 minutes',
      body: {
        type: 'object', required: ['user', 'code'], additionalProperties: false,
        properties: {
          user: { type: 'string', minLength: 1, maxLength: 64, description: 'Username or a previous username (alias).' },
          code: { type: 'string', minLength: 1, maxLength: 64, description: 'One backup code; case, spaces and dashes do not matter.' },
        },
      },
      response: {
        200: okObject({
          identityId: { type: 'string' }, home: { type: 'string' },
          remaining: { type: 'integer', description: 'Unused backup codes left after this one.' }, receipt,
        }, ['identityId', 'home', 'remaining']),
        ...errorResponses,
      },
    },
  }, async (request, reply) => {
    if (!isHtmlFormPost(request)) return verify(request, reply);
    // The no-JavaScript form: success lands on the account page, a refusal re-shows the form.
    try {
      await verify(request, reply);
      return reply.redirect('/account', 303);
    } catch (error) {
      if (!isKeyplaneError(error)) throw error;
      reply.code(error.status).headers(error.headers).type('text/html; charset=utf-8');
      return recoveryFormPage(request.kp.cspNonce, { user: (request.body as { user?: string }).user ?? '', reason: error.reason });
    }
  });

  app.get('/auth/recovery', {
    schema: { tags: ['accounts'], summary: 'HTML page: sign in with a backup code (a plain form, no JavaScript needed)', produces: ['text/html'] },
  }, async (request, reply) => {
    reply.type('text/html; charset=utf-8');
    return recoveryFormPage(request.kp.cspNonce);
  });

  async function verify(request: FastifyRequest, reply: FastifyReply) {
    checkSignInOrigin(app, request);
    await limitPerIp(app.kp, request, 'recovery-verify');
    const { user, code } = request.body as { user: string; code: string };
    const name = foldUsername(user);
    await limitPerAccount(app.kp, 'recovery-verify', sha256Hex(name));
    const identity = await app.kp.storage.identities.findByUsername(name);
    const refused = fail('invalid_recovery_code', 'that account name or backup code is not right');
    if (!identity) {
      // Same work as for a real account, so the answer's timing does not tell which names exist.
      matchRecoveryCode(macKey, code, []);
      throw refused;
    }
    const identityId = identity.identityId;
    await assertNotLocked(app.kp, 'recovery', identityId);
    const candidates = await app.kp.storage.recoveryCodes.listUnused(identityId);
    const match = matchRecoveryCode(macKey, code, candidates);
    if (!match) throw (await recordCodeFailure(app.kp, 'recovery', identityId)) ?? refused;

    const at = app.kp.now();
    const result = await app.kp.storage.transaction(async (tx) => {
      // One conditional update: of two concurrent uses of the same code, one signs in.
      if (!(await tx.recoveryCodes.consume(identityId, match.codeId, at))) throw refused;
      const started = await startSession(app, reply, tx, { identityId, assurance: 'recovery', amr: RECOVERY_AMR });
      const used = await app.kp.events.record(tx, {
        type: 'recovery.used', at, outcome: 'success', identityId, sessionId: started.sessionId, remaining: candidates.length - 1,
      });
      return { receipt: started.receipt ?? used.receipt };
    });
    await recordCodeSuccess(app.kp, 'recovery', identityId);
    return { ok: true, identityId, home: '/account', remaining: candidates.length - 1, ...(result.receipt ? { receipt: result.receipt } : {}) };
  }
}
