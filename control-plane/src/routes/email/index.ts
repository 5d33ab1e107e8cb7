import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fail, isKeyplaneError } from '../../../../lib/errors/keyplane-error.js';
import { normalizeEmailAddress } from '../../../../lib/magic/email-address.js';
import { checkMagicLink, issueEmailVerificationLink, redeemMagicLink, type RedeemFailure } from '../../../../lib/magic/magic-link.js';
import { RateLimiter } from '../../../../lib/runtime/security/rate-limiter.js';
import { randomId } from '../../../../lib/util/random.js';
import { sha256Hex } from '../../../../lib/util/sha256.js';
import { verificationMail } from '../../mail/templates.js';
import { emailConfirmPage, emailVerifiedPage, linkRefusalPage } from '../../pages/link-pages.js';
import { requireSession } from '../../plugins/session.js';
import { isHtmlFormPost, wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField as receipt } from '../../http/schemas.js';

/** Addresses one account may hold. */
export const MAX_EMAILS = 10;
export const LINK_REASONS: Record<RedeemFailure, 'link_invalid' | 'link_used' | 'link_expired' | 'link_wrong_device'> = {
  unknown: 'link_invalid', used: 'link_used', expired: 'link_expired', wrong_device: 'link_wrong_device',
};

/** Mail bucket shared with magic links: one address gets at most `magicLinksPerAddressPerHour` mails an hour. */
export function addressBucket(email: string): string {
  return sha256Hex(`keyplane:address:v1:${email}`);
}

/**
 * Email addresses on the account. Adding one mails a verification link; opening the link marks
 * the address verified and does nothing else: it creates, merges and upgrades no session
 * (spec "OIDC rules" 11), whoever opens it and whatever session that browser has.
 */
export default async function emailRoutes(app: FastifyInstance): Promise<void> {
  app.post('/auth/email/add', {
    preHandler: requireSession,
    schema: {
      tags: ['accounts'], summary: 'Adds an email address to the account and mails it a verification link', security: [{ sessionCookie: [] }],
      body: {
        type: 'object', required: ['email'], additionalProperties: false,
        properties: { email: { type: 'string', minLength: 3, maxLength: 254 } },
      },
      response: {
        200: okObject({
          email: { type: 'string' }, verified: { type: 'boolean' },
          sent: { type: 'boolean', description: 'Whether a verification mail went out (false when already verified).' }, receipt,
        }, ['email', 'verified', 'sent']),
        ...errorResponses,
      },
    },
  }, async (request) => {
    const session = request.kp.session!;
    const email = normalizeEmailAddress((request.body as { email: string }).email);
    if (!email) throw fail('invalid_email', 'that does not look like an email address');
    const limit = { max: app.kp.config.limits.magicLinksPerAddressPerHour, windowMs: 3_600_000 };
    const at = app.kp.now();
    const endpoint = new URL(`${app.kp.config.issuer}/auth/email/verify`).toString();
    const lifetime = app.kp.config.lifetimes.emailVerification;

    // Used and expired links are kept a day so their pages can say which; then they go.
    await app.kp.storage.links.purgeExpired(app.kp.now() - 86_400_000);
    const outcome = await app.kp.storage.transaction(async (tx) => {
      const existing = await tx.emails.listByIdentity(session.identityId);
      // A cap, so one account cannot make the server mail an unbounded list of strangers.
      if (existing.length >= MAX_EMAILS && !existing.some((e) => e.email === email)) throw fail('too_many_emails', `an account holds at most ${MAX_EMAILS} addresses`);
      const emailId = randomId('eml');
      const row = await tx.emails.add({ emailId, identityId: session.identityId, email, createdAt: at, verifiedAt: null });
      if (row.verifiedAt !== null) return { row, sent: false as const };
      const added = row.emailId === emailId
        ? await app.kp.events.record(tx, { type: 'email.added', at, outcome: 'success', identityId: session.identityId, emailId: row.emailId })
        : {};
      // The server never becomes a way to flood someone's mailbox.
      const decision = await new RateLimiter(app.kp.state).hit('verify-mail', addressBucket(email), limit);
      if (!decision.allowed) {
        throw fail('rate_limited', 'too many verification mails to this address; try again later', {
          headers: { 'retry-after': String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000))) },
        });
      }
      const link = issueEmailVerificationLink({ endpoint, identityId: session.identityId, emailId: row.emailId, now: at, lifetimeMs: lifetime * 1000 });
      await tx.links.insert(link.record);
      return { row, sent: true as const, url: link.url, ...added };
    });
    if (outcome.sent) app.kp.mailer.enqueue(verificationMail(email, outcome.url, lifetime));
    return {
      ok: true, email, verified: outcome.row.verifiedAt !== null, sent: outcome.sent,
      ...('receipt' in outcome && outcome.receipt ? { receipt: outcome.receipt } : {}),
    };
  });

  // The confirmation page posts back with the session cookie when the browser has one: under the
  // app-wide `no-referrer` Chromium would send `Origin: null`, which the session plugin refuses.
  const sameOriginReferrer = new WeakSet<FastifyReply>();
  app.addHook('onSend', async (_request, reply, payload) => {
    if (sameOriginReferrer.has(reply)) reply.header('referrer-policy', 'same-origin');
    return payload;
  });

  function refusalPage(request: FastifyRequest, reply: FastifyReply, error: unknown): string {
    if (!isKeyplaneError(error) || wantsJson(request)) throw error;
    reply.code(error.status).type('text/html; charset=utf-8');
    return linkRefusalPage({ nonce: request.kp.cspNonce, reason: error.reason, retryHref: '/account', retryLabel: 'Go to your account (add the address again for a new link)' });
  }

  app.get('/auth/email/verify', {
    // A HEAD (link preview, scanner) must never consume a one-time link; nor does a GET.
    exposeHeadRoute: false,
    schema: {
      tags: ['accounts'],
      summary: 'The mailed link: checks it and shows a confirmation page whose button POSTs to verify (mail scanners open links by GET, so a GET verifies nothing). JSON with Accept: application/json',
      querystring: { type: 'object', properties: { token: { type: 'string', maxLength: 200 } } },
      produces: ['text/html', 'application/json'],
      response: { 200: okObject({ verified: { const: false }, confirm: { type: 'string', description: 'POST /auth/email/verify with {token} verifies.' } }), ...errorResponses },
    },
  }, async (request, reply) => {
    const token = (request.query as { token?: string }).token ?? '';
    try {
      const checked = await checkMagicLink(token, { purpose: 'verify_email', now: app.kp.now(), find: (hash) => app.kp.storage.links.find(hash) });
      if (!checked.ok) throw fail(LINK_REASONS[checked.why]);
    } catch (error) {
      return refusalPage(request, reply, error);
    }
    if (wantsJson(request)) return { ok: true, verified: false, confirm: 'POST /auth/email/verify' };
    sameOriginReferrer.add(reply);
    reply.type('text/html; charset=utf-8');
    return emailConfirmPage(request.kp.cspNonce, token);
  });

  app.post('/auth/email/verify', {
    schema: {
      tags: ['accounts'],
      summary: 'Marks an address verified (the confirmation page\'s button, or JSON {token}); creates, merges or upgrades no session',
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      body: { type: 'object', required: ['token'], properties: { token: { type: 'string', maxLength: 200 } } },
      produces: ['text/html', 'application/json'],
      response: { 200: okObject({ verified: { const: true }, already: { type: 'boolean' }, receipt }), ...errorResponses },
    },
  }, async (request, reply) => {
    const token = (request.body as { token: string }).token;
    const at = app.kp.now();
    const html = isHtmlFormPost(request);
    try {
      const result = await app.kp.storage.transaction(async (tx) => {
        const redemption = await redeemMagicLink(token, {
          purpose: 'verify_email', now: at, find: (hash) => tx.links.find(hash), consume: (hash, now) => tx.links.consume(hash, now),
        });
        if (!redemption.ok) throw fail(LINK_REASONS[redemption.why]);
        const { record } = redemption;
        const marked = await tx.emails.markVerified(record.emailId, at);
        // Throwing rolls the consumption back: the link still works if the other account lets the address go.
        if (marked === 'taken') throw fail('email_taken', 'another account verified this address first');
        if (marked === 'already') return { already: true };
        const recorded = await app.kp.events.record(tx, { type: 'email.verified', at, outcome: 'success', identityId: record.identityId, emailId: record.emailId });
        return { already: false, ...recorded };
      });
      if (!html) return { ok: true, verified: true, ...result };
      reply.type('text/html; charset=utf-8');
      return emailVerifiedPage(request.kp.cspNonce, result.already);
    } catch (error) {
      if (!html) throw error;
      return refusalPage(request, reply, error);
    }
  });
}
