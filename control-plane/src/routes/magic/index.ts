import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { meetsAssurance } from '../../../../lib/assurance/assurance.js';
import { fail, isKeyplaneError } from '../../../../lib/errors/keyplane-error.js';
import { normalizeEmailAddress } from '../../../../lib/magic/email-address.js';
import { issueMagicLink, redeemMagicLink } from '../../../../lib/magic/magic-link.js';
import { RateLimiter } from '../../../../lib/runtime/security/rate-limiter.js';
import { magicLinkMail } from '../../mail/templates.js';
import { linkRefusalPage, magicRequestedPage, magicRequestPage, signedInContinuePage } from '../../pages/link-pages.js';
import { checkSignInOrigin } from '../../plugins/session.js';
import { currentDeviceId, ensureDeviceId } from '../../sessions/cookies.js';
import { startSession } from '../../sessions/start-session.js';
import type { Stores } from '../../storage/types.js';
import { limitPerIp } from '../../http/code-guard.js';
import { addressBucket, LINK_REASONS } from '../email/index.js';
import { isHtmlFormPost, wantsJson } from '../../http/negotiate.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { isAllowedReturn } from '../../magic/return.js';

/** RFC 8176 registers no value for a mailed link; `email` is the conventional one (documented). */
const MAGIC_AMR = ['email'];
const PROJECT_MAX = 80;
/** The one answer of a real request, whether or not the address has an account, and over the limit too. */
const REQUESTED = 'If this address is verified on an account, a sign-in link is on its way. It works once, for a few minutes, in this browser only.';

/** `dryRun` is "any" in the spec: present and not an explicit false value means yes. */
function isDryRun(value: unknown): boolean {
  return value !== undefined && value !== null && value !== false && value !== '' && value !== 0 && value !== 'false' && value !== '0';
}

function cleanProject(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.replace(/[\u0000-\u001f\u007f]/g, ' ').trim().slice(0, PROJECT_MAX);
  return text === '' ? undefined : text;
}

/** Magic sign-in links: mailed only to verified addresses, one use, 10 minutes, on the requesting device. */
export default async function magicRoutes(app: FastifyInstance): Promise<void> {
  const endpoint = new URL(`${app.kp.config.issuer}/auth/magic`).toString();
  const lifetimeMs = () => app.kp.config.lifetimes.magicLink * 1000;

  async function issueFor(tx: Stores, emailId: string, identityId: string, deviceId: string, extras: { returnTo?: string; project?: string }) {
    const link = issueMagicLink({ endpoint, identityId, emailId, deviceId, now: app.kp.now(), lifetimeMs: lifetimeMs(), ...extras });
    await tx.links.insert(link.record);
    return link;
  }

  app.post('/auth/magic/request', {
    schema: {
      tags: ['accounts'],
      summary: 'Requests a magic sign-in link; answers the same whether or not the address has an account. `dryRun` (session) returns the link instead of mailing it',
      body: {
        type: 'object', required: ['email'], additionalProperties: false,
        properties: {
          email: { type: 'string', minLength: 3, maxLength: 254 },
          dryRun: { description: 'Any value but false/0/"": return the link without sending. Own verified address with a session; any address for the founder at `sensitive` (receipted).' },
          return: { type: 'string', maxLength: 2048, description: 'Where to land after sign-in: a path on this server (or, later, a registered relying-party URI).' },
          project: { type: 'string', maxLength: 200, description: 'Display name of the application being signed in to, shown as plain text.' },
        },
      },
      response: {
        200: okObject({
          message: { type: 'string' }, dryRun: { type: 'boolean' }, link: { type: 'string' }, expiresAt: { type: 'integer' },
          receipt: receiptField,
        }),
        ...errorResponses,
      },
    },
  }, async (request, reply) => {
    if (!isHtmlFormPost(request)) return requestLink(request, reply);
    // The no-JavaScript form: the same answer as a page, a refusal re-shows the form.
    const body = request.body as { email?: string; return?: string; project?: string };
    try {
      const answer = await requestLink(request, reply);
      reply.type('text/html; charset=utf-8');
      return magicRequestedPage(request.kp.cspNonce, answer.message ?? REQUESTED);
    } catch (error) {
      if (!isKeyplaneError(error)) throw error;
      reply.code(error.status).headers(error.headers).type('text/html; charset=utf-8');
      return magicRequestPage(request.kp.cspNonce, { email: body.email ?? '', reason: error.reason, ...(await formExtras(body)) });
    }
  });

  app.get('/auth/magic/request', {
    schema: {
      tags: ['accounts'], summary: 'HTML page: ask for a magic sign-in link (a plain form, no JavaScript needed)', produces: ['text/html'],
      querystring: { type: 'object', properties: { return: { type: 'string', maxLength: 2048 }, project: { type: 'string', maxLength: 200 } } },
    },
  }, async (request, reply) => {
    reply.type('text/html; charset=utf-8');
    return magicRequestPage(request.kp.cspNonce, await formExtras(request.query as { return?: string; project?: string }));
  });

  /** `return` (only when allowed) and `project` carried through the request form. */
  async function formExtras(source: { return?: string; project?: string }): Promise<{ returnTo?: string; project?: string }> {
    const returnTo = source.return ? await isAllowedReturn(app.kp, source.return) : null;
    const project = cleanProject(source.project);
    return { ...(returnTo ? { returnTo } : {}), ...(project ? { project } : {}) };
  }

  async function requestLink(request: FastifyRequest, reply: FastifyReply): Promise<{ ok: true; message?: string; dryRun?: boolean; link?: string; expiresAt?: number; receipt?: string }> {
    checkSignInOrigin(app, request);
    await limitPerIp(app.kp, request, 'magic-request');
    const body = request.body as { email: string; dryRun?: unknown; return?: string; project?: string };
    const email = normalizeEmailAddress(body.email);
    if (!email) throw fail('invalid_email', 'that does not look like an email address');
    let returnTo: string | undefined;
    if (body.return !== undefined && body.return !== '') {
      returnTo = (await isAllowedReturn(app.kp, body.return)) ?? undefined;
      if (!returnTo) throw fail('invalid_return', 'return must be a path on this server');
    }
    const extras = { ...(returnTo ? { returnTo } : {}), ...(cleanProject(body.project) ? { project: cleanProject(body.project)! } : {}) };
    if (isDryRun(body.dryRun)) return dryRun(request, email, extras);

    // The device cookie is minted for every requester, so the answer's headers do not differ either.
    const deviceId = request.kp.session?.deviceId ?? ensureDeviceId(app, request, reply);
    // Counted for every address, known or not; over the limit the answer is the same and nothing is sent.
    const limit = await new RateLimiter(app.kp.state).hit('magic-mail', addressBucket(email), {
      max: app.kp.config.limits.magicLinksPerAddressPerHour, windowMs: 3_600_000,
    });
    // Used and expired links are kept a day so their pages can say which; then they go.
    await app.kp.storage.links.purgeExpired(app.kp.now() - 86_400_000);
    const target = limit.allowed ? await app.kp.storage.emails.findVerified(email) : null;
    if (target) {
      const link = await app.kp.storage.transaction(async (tx) => {
        const issued = await issueFor(tx, target.emailId, target.identityId, deviceId, extras);
        // Recorded, but its receipt is not returned: the answer must not tell that a mail went out.
        await app.kp.events.record(tx, { type: 'magic_link.sent', at: app.kp.now(), outcome: 'success', identityId: target.identityId, emailId: target.emailId, deviceId });
        return issued;
      });
      app.kp.mailer.enqueue(magicLinkMail(email, link.url, app.kp.config.lifetimes.magicLink));
    }
    return { ok: true, message: REQUESTED };
  }

  /**
   * A dry run returns the link instead of mailing it (for testing a deployment's mail path and
   * for support). With a session, for the session's own verified address; for any verified
   * address only when the session is the founder's at `sensitive`, and that is receipted.
   */
  async function dryRun(request: FastifyRequest, email: string, extras: { returnTo?: string; project?: string }) {
    const session = request.kp.session;
    if (!session) throw fail('unauthorized', 'a dry run needs a session');
    const target = await app.kp.storage.emails.findVerified(email);
    const own = target !== null && target.identityId === session.identityId;
    let founder = false;
    if (!own) {
      const actor = await app.kp.storage.identities.get(session.identityId);
      founder = actor?.founder === true && meetsAssurance(session.assurance, 'sensitive');
      if (!founder) throw fail('forbidden', 'a dry run is for your own verified address (the founder at sensitive assurance may use any)');
      if (!target) throw fail('not_found', 'no account has this address verified');
    }
    const at = app.kp.now();
    const { link, receipt } = await app.kp.storage.transaction(async (tx) => {
      const issued = await issueFor(tx, target!.emailId, target!.identityId, session.deviceId, extras);
      const recorded = await app.kp.events.record(tx, {
        type: 'magic_link.dry_run', at, outcome: 'success', identityId: target!.identityId, actorIdentityId: session.identityId,
        actorSessionId: session.id, emailId: target!.emailId, founder,
      });
      return { link: issued, ...recorded };
    });
    return { ok: true as const, dryRun: true, link: link.url, expiresAt: link.record.expiresAt, ...(receipt ? { receipt } : {}) };
  }

  app.get('/auth/magic', {
    // A HEAD (link preview, scanner) must never consume a one-time link.
    exposeHeadRoute: false,
    schema: {
      tags: ['accounts'],
      summary: 'Consumes a magic link on the device that requested it, signs in at `email` and hands off to the validated return (or /account)',
      querystring: {
        type: 'object',
        properties: { token: { type: 'string', maxLength: 200 }, return: { type: 'string', maxLength: 2048 }, project: { type: 'string', maxLength: 200 } },
      },
      produces: ['text/html'],
      response: { ...errorResponses },
    },
  }, async (request, reply) => {
    const query = request.query as { token?: string; return?: string; project?: string };
    const project = cleanProject(query.project);
    try {
      return await redeem(request, reply, query.token ?? '', query.return, project);
    } catch (error) {
      if (!isKeyplaneError(error) || wantsJson(request)) throw error;
      reply.code(error.status).type('text/html; charset=utf-8');
      const extras = await formExtras(query);
      const again = new URLSearchParams();
      if (extras.returnTo) again.set('return', extras.returnTo);
      if (extras.project) again.set('project', extras.project);
      const retryHref = `/auth/magic/request${again.toString() ? `?${again.toString()}` : ''}`;
      return linkRefusalPage({ nonce: request.kp.cspNonce, reason: error.reason, project, retryHref, retryLabel: 'Ask for a new sign-in link' });
    }
  });

  async function redeem(request: FastifyRequest, reply: FastifyReply, token: string, rawReturn: string | undefined, project: string | undefined) {
    // Validated before the token is touched: a link with a bad return is refused and stays unused.
    let target = '/account';
    if (rawReturn !== undefined && rawReturn !== '') {
      const allowed = await isAllowedReturn(app.kp, rawReturn);
      if (!allowed) throw fail('invalid_return', 'the return target is not allowed');
      target = allowed;
    }
    const deviceId = currentDeviceId(app, request) ?? request.kp.session?.deviceId ?? null;
    const at = app.kp.now();
    await app.kp.storage.transaction(async (tx) => {
      const redemption = await redeemMagicLink(token, {
        purpose: 'signin', now: at, deviceId, find: (hash) => tx.links.find(hash), consume: (hash, now) => tx.links.consume(hash, now),
      });
      if (!redemption.ok) throw fail(LINK_REASONS[redemption.why]);
      const { record } = redemption;
      // The address may have been verified by the link's account and since moved: check it still is.
      const email = await tx.emails.get(record.emailId);
      if (!email || email.verifiedAt === null || email.identityId !== record.identityId) throw fail('link_invalid', 'this address is no longer verified on the account');
      const current = request.kp.session;
      let sessionId: string;
      if (current && current.identityId === record.identityId && meetsAssurance(current.assurance, 'email')) {
        // Already signed in to this account at least as strongly: keep that session, never downgrade it.
        sessionId = current.id;
      } else {
        sessionId = (await startSession(app, reply, tx, { identityId: record.identityId, deviceId: record.deviceId!, assurance: 'email', amr: MAGIC_AMR })).sessionId;
      }
      await app.kp.events.record(tx, {
        type: 'magic_link.redeemed', at, outcome: 'success', identityId: record.identityId, emailId: record.emailId, deviceId: record.deviceId!, sessionId,
      });
    });
    // A path on this server (a pending authorize request hands off to its client from there) is
    // followed; a relying-party URI is only linked: anyone can register one, and the link proves
    // no client (docs/security.md "Open redirects").
    if (target.startsWith('/')) return reply.redirect(target, 303);
    reply.type('text/html; charset=utf-8');
    return signedInContinuePage(request.kp.cspNonce, target, project);
  }
}
