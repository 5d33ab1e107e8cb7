import type { FastifyInstance } from 'fastify';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { sameOriginReturn } from '../../../../lib/magic/magic-link.js';
import { html, page } from '../../pages/layout.js';
import { requireSession } from '../../plugins/session.js';
import { errorResponses, okObject } from '../../http/schemas.js';
import { CredentialLimits, readAssertion, requestOptions, takeChallenge, verifyAssertion } from '../passkeys/ceremony.js';
import { requireTotpIfActive } from '../../totp/step-up-gate.js';

/**
 * Step-up: the signed-in user re-verifies a passkey of this account for the purpose (plus TOTP
 * when the account has it active); the session then counts as `sensitive` for
 * `lifetimes.stepUp` seconds (default 300) and its `auth_time` moves to now.
 */
export default async function stepUpRoutes(app: FastifyInstance): Promise<void> {
  const limits = new CredentialLimits(app);
  const { storage } = app.kp;
  app.addHook('onRequest', requireSession);

  app.get('/auth/step-up', {
    schema: {
      tags: ['passkeys'], summary: 'HTML step-up page: confirm with a passkey (and TOTP when active) to reach `sensitive`',
      querystring: { type: 'object', properties: { return: { type: 'string' } } }, produces: ['text/html'],
    },
  }, async (request, reply) => {
    // A `return` target must be a path on this server (never `//host` or a scheme).
    const back = sameOriginReturn((request.query as { return?: string }).return ?? '', app.kp.config.issuer) ?? '/account';
    reply.type('text/html; charset=utf-8');
    return page({
      title: 'Confirm it is you',
      nonce: request.kp.cspNonce,
      scripts: ['/assets/step-up.js'],
      body: html`<h1>Confirm it is you</h1>
<p>This action needs a fresh confirmation. Use one of your passkeys; it counts for ${Math.round(app.kp.config.lifetimes.stepUp / 60)} minutes.</p>
<form id="step-up-form" data-return="${back}" novalidate>
  <label for="totp-code">Authenticator code (only if your account uses one)</label>
  <input id="totp-code" name="totpCode" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6">
  <button type="submit" data-action="step-up">Confirm with a passkey</button>
  <p id="status" role="status" aria-live="polite"></p>
</form>
<p><a href="${back}">Cancel</a></p>`,
    });
  });

  app.post('/auth/step-up/options', {
    schema: {
      tags: ['passkeys'], summary: 'Begin a step-up: request options limited to this account\'s passkeys', security: [{ sessionCookie: [] }],
      response: { 200: okObject({ options: { type: 'object', additionalProperties: true } }, ['options']), ...errorResponses },
    },
  }, async (request) => {
    const session = request.kp.session!;
    await limits.perIp(request, 'step-up');
    await limits.perAccount('step-up', session.identityId);
    const allow = await storage.credentials.listByIdentity(session.identityId);
    return { ok: true, options: await requestOptions(app, allow, { purpose: 'step-up', identityId: session.identityId, sessionId: session.id }) };
  });

  app.post('/auth/step-up/verify', {
    schema: {
      tags: ['passkeys'], summary: 'Finish a step-up: the session is `sensitive` until `expiresAt`', security: [{ sessionCookie: [] }],
      body: { type: 'object', required: ['response'], properties: { response: {}, totpCode: { type: 'string' } } },
      response: {
        200: okObject({ assurance: { const: 'sensitive' }, expiresAt: { type: 'integer' }, receipt: { type: 'string' } }, ['assurance', 'expiresAt']),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const body = request.body as { response: unknown; totpCode?: string };
    const session = request.kp.session!;
    await limits.perIp(request, 'step-up');
    await limits.perAccount('step-up', session.identityId);
    const { id, clientData, fields, userHandle } = readAssertion(body.response);
    const state = await takeChallenge(app, clientData, 'step-up');
    if (state.identityId !== session.identityId || state.sessionId !== session.id) throw fail('challenge_mismatch', 'this step-up was started by another session');
    const credential = await storage.credentials.get(id);
    if (!credential || credential.identityId !== session.identityId) throw fail('unknown_credential', 'this passkey does not belong to your account');
    if (userHandle !== undefined && userHandle !== credential.identityId) throw fail('unknown_credential', 'this passkey does not belong to your account');
    const use = await verifyAssertion(app, body.response, clientData, fields, credential);
    const totp = await requireTotpIfActive(app.kp, session.identityId, body.totpCode);
    const now = app.kp.now();
    const amr = [...new Set([...session.amr, 'pop', 'user', ...(totp ? ['otp', 'mfa'] : [])])];
    const { receipt } = await storage.transaction(async (tx) => {
      await tx.credentials.recordUse(credential.credId, { ...use, at: now });
      await tx.sessions.stepUp(session.id, { at: now, assurance: 'passkey', amr, credId: credential.credId });
      return app.kp.events.record(tx, { type: 'step_up.completed', at: now, outcome: 'success', identityId: session.identityId, sessionId: session.id, credId: credential.credId, totp });
    });
    return { ok: true, assurance: 'sensitive' as const, expiresAt: now + app.kp.config.lifetimes.stepUp * 1000, ...(receipt ? { receipt } : {}) };
  });
}
