import { consentApiScopes } from '../../apis/apis.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { meetsAssurance } from '#lib/assurance/assurance.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { rateLimited } from '#lib/errors/rate-limited.js';
import { DEVICE_CODE_GRANT, formatUserCode, normalizeUserCode } from '#lib/oauth/device-code.js';
import { oauthError } from '#lib/oauth/errors.js';
import { randomToken } from '#lib/crypto/random.js';
import { Lockout } from '#lib/runtime/security/lockout.js';
import { usernameOf } from '../../accounts/profile.js';
import type { ErrorPage } from '../../plugins/errors.js';
import { accessRuleParts } from '#lib/access/evaluate-access.js';
import { authenticateClient } from '../../clients/authenticate-client.js';
import { registrantOf } from '../../clients/registrant.js';
import { checkClientAccess } from '../../clients/sign-in-access.js';
import { findClient } from '../../clients/find-client.js';
import {
  decideDeviceAuthorization,
  findByUserCode,
  startDeviceAuthorization,
} from '../../oidc/device-authorization.js';
import { readTokenRequestBody } from '../../oidc/token-request.js';
import { limitPerAccount, limitPerIp } from '../../http/code-guard.js';
import { errorResponses } from '../../http/schemas.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { formError, html, page, raw, type SafeHtml } from '../../pages/layout.js';
import { refusalNote } from '../../pages/refusal-page.js';
import { uiOf } from '../../pages/ui.js';
import { sendNotAdmitted, sendOneTap } from './pages.js';
import { clientLinksOf } from '../../oidc/authorize/views.js';

export const DEVICE_AUTHORIZATION_PATH = '/auth/device';
export const VERIFICATION_PATH = '/device';
/**
 * RFC 8628 §5.4: the device flow can be phished (someone forwards their user code), so approving
 * one asks for a sign-in of at most this age; an older one steps up first (a passkey tap).
 */
const FRESH_SIGN_IN_MS = 10 * 60_000;
/** A page's approval token lives this long (ms). */
const APPROVAL_TTL_MS = 5 * 60_000;
/**
 * Wrong user codes an account, or an address, may type before both must wait: then every code
 * is refused, right or wrong, so that the lock tells a guesser nothing (RFC 8628 §5.1).
 */
const WRONG_CODES = { threshold: 10, lockMs: 15 * 60_000 };

/**
 * The device authorization grant (RFC 8628): `POST /auth/device` for the device, and the
 * verification page `/device` where a signed-in person types (or follows) the user code, sees
 * the client and its scopes, and approves or declines.
 */
export default async function deviceRoutes(app: FastifyInstance): Promise<void> {
  const { issuer } = app.kp.config;
  const wrongCodes = new Lockout(app.kp.state, WRONG_CODES, app.kp.now);

  const lockedOut = (retryAfterMs: number) =>
    rateLimited(retryAfterMs, 'too many wrong codes; wait before trying again');

  app.post(
    DEVICE_AUTHORIZATION_PATH,
    {
      config: {
        discovery: { endpoint: 'device_authorization_endpoint' },
      },
      schema: {
        tags: ['oidc'],
        summary:
          'Device authorization (RFC 8628 §3.1): a device code to poll the token endpoint with, and a user code for the person to enter at /device',
        consumes: ['application/x-www-form-urlencoded', 'application/json'],
        body: { type: 'object', additionalProperties: true },
        response: {
          200: {
            type: 'object',
            required: ['device_code', 'user_code', 'verification_uri', 'expires_in', 'interval'],
            properties: {
              device_code: { type: 'string' },
              user_code: { type: 'string' },
              verification_uri: { type: 'string' },
              verification_uri_complete: { type: 'string' },
              expires_in: { type: 'integer' },
              interval: { type: 'integer' },
            },
            additionalProperties: false,
          },
          ...errorResponses,
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const body = readTokenRequestBody(request.body);
      await limitPerIp(app.kp, request, 'device');
      const client = await authenticateClient(app.kp, request.headers.authorization, body);
      if (!client.metadata.grant_types.includes(DEVICE_CODE_GRANT))
        throw oauthError('unauthorized_client', `this client is not registered for ${DEVICE_CODE_GRANT}`);
      const started = await startDeviceAuthorization(app.kp, client, body);
      const verificationUri = `${issuer}${VERIFICATION_PATH}`;
      return {
        device_code: started.deviceCode,
        user_code: started.userCode,
        verification_uri: verificationUri,
        verification_uri_complete: `${verificationUri}?user_code=${started.userCode}`,
        expires_in: started.expiresIn,
        interval: started.interval,
      };
    },
  );

  /** The code entry form; with a problem (a wrong code, or a refusal) above it and the typed code kept. */
  function entryForm(request: FastifyRequest, reply: FastifyReply, problem?: SafeHtml, typed = ''): string {
    const ui = uiOf(request);
    const error = formError(problem);
    return page({
      title: ui.t('device.title'),
      nonce: request.kp.cspNonce,
      ui,
      body: html`<h1>${ui.t('device.title')}</h1>
<p>${ui.t('device.explain')}</p>
${error.region}<form method="post" action="${VERIFICATION_PATH}" data-action="device-code">
  <label for="user-code">${ui.t('device.code')}</label>
  <input id="user-code" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="12" placeholder="XXXX-XXXX" required value="${typed}"${problem ? error.field({ first: true }) : html` autofocus`}>
  <button type="submit">${ui.t('device.continue')}</button>
</form>`,
    });
  }

  function sendEntryForm(request: FastifyRequest, reply: FastifyReply, problem?: MessageKey): FastifyReply {
    reply.code(problem ? 400 : 200).type('text/html; charset=utf-8');
    const wrong =
      problem && html`<span data-reason="invalid_user_code">${uiOf(request).t(problem, { minutes: 10 })}</span>`;
    return reply.send(entryForm(request, reply, wrong));
  }

  /**
   * A refusal of the entry page or its form (a lock after wrong codes, a code too long, an outage):
   * the form again with the typed code and the reason (docs/errors.md#one-error-path).
   */
  const entryRefusal: ErrorPage = (request, failure, reply) => {
    if (!request.kp.session) return undefined;
    const source = (request.method === 'GET' ? request.query : request.body) as { user_code?: unknown } | undefined;
    const typed = typeof source?.user_code === 'string' ? source.user_code.slice(0, 32) : '';
    return entryForm(request, reply, refusalNote(uiOf(request), failure), typed);
  };

  function sendDone(request: FastifyRequest, reply: FastifyReply, approved: boolean, receipt?: string): FastifyReply {
    reply.code(200).type('text/html; charset=utf-8');
    // Every decision leaves a receipt (docs/ledger.md); the page names it for the person's records.
    const ui = uiOf(request);
    const footer = receipt
      ? html`\n<p class="muted">${raw(ui.rich('device.receipt', { code: (c) => html`<code data-receipt="${receipt}">${raw(c)}</code>`.value }, { receipt }))}</p>`
      : '';
    return reply.send(
      page({
        title: ui.t(approved ? 'device.approved' : 'device.denied'),
        nonce: request.kp.cspNonce,
        ui,
        body: approved
          ? html`<h1 data-result="approved">${ui.t('device.approved')}</h1>
<p>${ui.t('device.approved_text')}</p>${footer}`
          : html`<h1 data-result="denied">${ui.t('device.denied')}</h1>
<p>${ui.t('device.denied_text')}</p>${footer}`,
      }),
    );
  }

  /** Shows the consent page for a typed code, after the throttles and the freshness check. */
  async function lookUp(request: FastifyRequest, reply: FastifyReply, typed: unknown): Promise<FastifyReply> {
    const session = request.kp.session!;
    await limitPerIp(app.kp, request, 'device-verify');
    await limitPerAccount(app.kp, 'device-verify', session.identityId);
    const subjects = [`device:${session.identityId}`, `device-ip:${request.ip}`];
    for (const subject of subjects) {
      const status = await wrongCodes.status(subject);
      if (status.locked) throw lockedOut(status.retryAfterMs);
    }
    const userCode = normalizeUserCode(typed);
    const found = userCode ? await findByUserCode(app.kp, userCode) : null;
    if (!found) {
      for (const subject of subjects) {
        const failure = await wrongCodes.recordFailure(subject);
        if (failure.locked) throw lockedOut(failure.retryAfterMs);
      }
      return sendEntryForm(request, reply, 'device.invalid');
    }
    const again = `${VERIFICATION_PATH}?user_code=${formatUserCode(userCode!)}`;
    const fresh = meetsAssurance(session.assurance, 'passkey') && app.kp.now() - session.authTime <= FRESH_SIGN_IN_MS;
    if (!fresh) return reply.redirect(`/auth/step-up?return=${encodeURIComponent(again)}`, 303);
    const client = await findClient(app.kp, found.authorization.clientId);
    if (!client) return sendEntryForm(request, reply, 'device.unregistered');
    const username = (await usernameOf(app.kp, session.identityId)) ?? session.identityId;
    const clientName = client.metadata.client_name ?? client.clientId;
    const access = await checkClientAccess(app.kp, client, session.identityId, 'device');
    if (!access.allowed) {
      // As at authorize: the person learns why, and the device hears `access_denied` at its next poll.
      await decideDeviceAuthorization(app.kp, session, userCode!, false);
      return sendNotAdmitted(request, reply, {
        clientName,
        clientOrigin: client.metadata.client_uri ?? clientName,
        username,
        admits: accessRuleParts({ orgs: client.metadata.access.orgs }),
        formAction: [],
      });
    }
    const approval = randomToken(24);
    await app.kp.state.set(
      `oidc:device-approval:${approval}`,
      JSON.stringify({ sessionId: session.id, userCode }),
      APPROVAL_TTL_MS,
    );
    const registrant = await registrantOf(app.kp, client);
    return sendOneTap(request, reply, {
      clientName,
      clientOrigin: client.metadata.client_uri ?? 'A device',
      ...clientLinksOf(client.metadata),
      // RFC 8628 §5.4: the device flow is phished by a look-alike name; only the operator vouches for one.
      ...(registrant.vouched ? {} : { selfDeclared: true }),
      registeredBy: registrant.name,
      username,
      scopes: found.authorization.scopes,
      ...(await consentApiScopes(app.kp, client, found.authorization.resource)),
      resources: found.authorization.resource ? [found.authorization.resource] : [],
      hidden: { approval },
      formAction: [],
      action: `${VERIFICATION_PATH}/approve`,
      userCode: formatUserCode(userCode!),
    });
  }

  const pageSchema = { tags: ['oidc'], produces: ['text/html'], response: { ...errorResponses } };

  app.get(
    VERIFICATION_PATH,
    {
      exposeHeadRoute: false,
      config: { errorPage: entryRefusal },
      schema: {
        ...pageSchema,
        summary: 'Device verification page (RFC 8628 §3.3): enter the user code, or follow verification_uri_complete',
        querystring: { type: 'object', properties: { user_code: { type: 'string', maxLength: 32 } } },
      },
    },
    async (request, reply) => {
      const typed = (request.query as { user_code?: string }).user_code;
      if (!request.kp.session) {
        const code = normalizeUserCode(typed);
        const back = code ? `${VERIFICATION_PATH}?user_code=${formatUserCode(code)}` : VERIFICATION_PATH;
        return reply.redirect(`/auth?return=${encodeURIComponent(back)}`, 303);
      }
      if (typed === undefined) return sendEntryForm(request, reply);
      return lookUp(request, reply, typed);
    },
  );

  app.post(
    VERIFICATION_PATH,
    {
      config: { errorPage: entryRefusal },
      schema: {
        ...pageSchema,
        summary: 'Device verification: the typed user code (throttled per address and account)',
        body: { type: 'object', properties: { user_code: { type: 'string', maxLength: 32 } } },
      },
    },
    async (request, reply) => {
      if (!request.kp.session) return reply.redirect(`/auth?return=${encodeURIComponent(VERIFICATION_PATH)}`, 303);
      return lookUp(request, reply, (request.body as { user_code?: string } | undefined)?.user_code);
    },
  );

  app.post(
    `${VERIFICATION_PATH}/approve`,
    {
      config: { errorPage: true },
      schema: {
        ...pageSchema,
        summary: "Device verification: the consent page's answer (allow or deny), once",
        body: {
          type: 'object',
          required: ['approval'],
          properties: { approval: { type: 'string', maxLength: 64 }, decision: { enum: ['allow', 'deny'] } },
        },
      },
    },
    async (request, reply) => {
      const session = request.kp.session;
      const { approval, decision } = request.body as { approval: string; decision?: 'allow' | 'deny' };
      const stored = /^[A-Za-z0-9_-]{32}$/.test(approval)
        ? await app.kp.state.take(`oidc:device-approval:${approval}`)
        : null;
      const grant = stored ? (JSON.parse(stored) as { sessionId: string; userCode: string }) : null;
      if (!session || !grant || grant.sessionId !== session.id)
        throw fail('access_denied', 'This approval has expired or belongs to another sign-in. Enter the code again.');
      const decided = await decideDeviceAuthorization(app.kp, session, grant.userCode, decision !== 'deny');
      if (!decided.decided) return sendEntryForm(request, reply, 'device.expired');
      if (decided.notAdmitted) {
        const { client } = decided.notAdmitted;
        const clientName = client.metadata.client_name ?? client.clientId;
        return sendNotAdmitted(request, reply, {
          clientName,
          clientOrigin: client.metadata.client_uri ?? clientName,
          username: (await usernameOf(app.kp, session.identityId)) ?? session.identityId,
          admits: accessRuleParts({ orgs: client.metadata.access.orgs }),
          formAction: [],
        });
      }
      return sendDone(request, reply, decision !== 'deny', decided.receipt);
    },
  );
}
