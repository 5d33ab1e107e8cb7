import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { presentsAdminToken } from '#lib/http/admin-token.js';
import { meetsAssurance } from '#lib/assurance/assurance.js';
import { clearSessionCookie } from '../../http/session-cookies.js';
import { samlKeyRing } from '../../saml/key-ring.js';
import {
  deleteProvider,
  describeProvider,
  getProvider,
  listProviders,
  registerProvider,
  updateProvider,
  type ProviderActor,
} from '../../saml/providers.js';
import { usernameOf } from '../../accounts/profile.js';
import { offerApproval } from '../../consent/gate.js';
import { sendNotAdmitted, sendOneTap } from '../oidc/pages.js';
import { accessRuleParts } from '#lib/access/evaluate-access.js';
import {
  answerApproval,
  completeLogout,
  decide,
  errorResponse,
  idpInitiated,
  idpMetadata,
  issueResponse,
  park,
  providerOf,
  samlAdmission,
  parked,
  parkLogout,
  receiveAuthnRequest,
  receiveLogoutRequest,
  samlConsent,
  takeParkedLogout,
  type IncomingMessage,
} from '../../saml/sso.js';
import { errorResponses, okObject, receiptField } from '../../http/schemas.js';
import { POST_JS, POST_SCRIPT, samlRefusalPage, sendPostForm, sendSignedOut } from './pages.js';

const bearerOrSession: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { sessionCookie: [] }];
const anyBody = { type: 'object', additionalProperties: true } as const;
const idParams = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;
const accessObject = {
  type: 'object',
  additionalProperties: false,
  properties: {
    orgs: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['slug'],
        properties: {
          slug: { type: 'string' },
          roles: { type: 'array', items: { enum: ['owner', 'admin', 'member'] } },
        },
      },
    },
  },
  description:
    'Who may sign in (docs/saml.md#who-may-sign-in): `{"orgs": [{slug, roles?}]}` admits only members of those orgs, in those roles; absent admits any account.',
} as const;
const providerObject = {
  type: 'object',
  additionalProperties: true,
  properties: {
    id: { type: 'string' },
    entity_id: { type: 'string' },
    name: { type: ['string', 'null'] },
    acs_urls: { type: 'array', items: { type: 'string' } },
    slo_url: { type: ['string', 'null'] },
    certificate: { type: 'string' },
    name_id_format: { type: 'string' },
    attributes: { type: 'object', additionalProperties: { type: 'string' } },
    allow_idp_initiated: { type: 'boolean' },
    want_signed_requests: { type: 'boolean' },
    access: accessObject,
    org_id: { type: ['string', 'null'] },
    revision: { type: 'integer' },
  },
} as const;
const providerReply = okObject({ provider: providerObject, receipt: receiptField }, ['provider']);
const providerBody = {
  type: 'object',
  required: ['entity_id', 'acs_urls', 'certificate'],
  additionalProperties: true,
  properties: {
    entity_id: { type: 'string', description: "The SP's entityID." },
    acs_urls: {
      type: 'array',
      items: { type: 'string' },
      description: 'Exact AssertionConsumerService URLs (HTTP-POST); the first is the default.',
    },
    certificate: {
      type: 'string',
      description: "The SP's signing certificate (PEM), pinned: requests must verify against it.",
    },
    name_id_format: {
      type: 'string',
      description: "`persistent` (default: the account's `sub`) or `email` (verified addresses only).",
    },
    attributes: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'SAML attribute name → source: sub, username, display_name, email, assurance, amr.',
    },
    slo_url: { type: 'string', description: "The SP's SingleLogoutService URL (HTTP-Redirect), if any." },
    allow_idp_initiated: { type: 'boolean', description: 'Accept IdP-initiated sign-in (default false).' },
    want_signed_requests: { type: 'boolean', description: 'Refuse unsigned AuthnRequests (default true).' },
    // Checked by checkProviderAccess, so that an unknown key is refused rather than stripped.
    access: { type: 'object', additionalProperties: true, description: accessObject.description },
    org: { type: 'string', description: 'Slug of the organization that owns it (required for an org admin).' },
    name: { type: 'string' },
  },
} as const;
// A repeated parameter arrives as an array: it reaches the handler, whose signature check refuses
// it as saml_signature_invalid (the octets as received are ambiguous), rather than failing here.
// Two branches, not `type: ['string', 'array']`: Ajv's strict mode prints a warning for every union type at start.
const oneOrMore = (description?: string) =>
  ({
    anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    ...(description ? { description } : {}),
  }) as const;
const samlQuery = {
  type: 'object',
  properties: {
    SAMLRequest: oneOrMore('HTTP-Redirect binding: the deflated, base64 request.'),
    RelayState: oneOrMore(),
    SigAlg: oneOrMore(),
    Signature: oneOrMore(),
    sp: {
      type: 'string',
      description: 'IdP-initiated sign-in: the provider id or entityID (only for providers that allow it).',
    },
    resume: { type: 'string', description: 'internal: resumes a request after sign-in or step-up' },
  },
} as const;
const samlBody = {
  type: 'object',
  properties: { SAMLRequest: { type: 'string' }, RelayState: { type: 'string' } },
  additionalProperties: true,
} as const;

/** A SAML message of the HTTP-Redirect binding, with the raw query its signature covers. */
function redirectMessage(request: FastifyRequest, query: Record<string, string | undefined>): IncomingMessage {
  const url = request.raw.url ?? '';
  const at = url.indexOf('?');
  return {
    binding: 'redirect',
    message: String(query.SAMLRequest),
    rawQuery: at < 0 ? '' : url.slice(at + 1),
    decoded: query,
    ...(query.RelayState !== undefined ? { relayState: query.RelayState } : {}),
  };
}

/** The SAML identity provider (docs/saml.md): metadata, SSO, SLO and the service-provider API. */
export default async function samlRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;

  /** The operator by the admin token, or a signed-in member (at `sensitive` to change anything). */
  function actorOf(request: FastifyRequest, change: boolean): ProviderActor {
    if (presentsAdminToken(services.config.adminToken, request.headers.authorization)) return { kind: 'operator' };
    const session = request.kp.session;
    if (!session) throw fail('unauthorized', 'sign in first, or send the admin token');
    if (change && !meetsAssurance(session.assurance, 'sensitive')) {
      throw fail(
        'insufficient_assurance',
        'changing a service provider needs a sensitive session; step up at /auth/step-up',
        { fields: { required: 'sensitive', stepUp: '/auth/step-up' } },
      );
    }
    return { kind: 'member', identityId: session.identityId };
  }

  app.get(
    '/saml/metadata',
    {
      config: { cache: 'public, max-age=3600' },
      schema: {
        tags: ['saml'],
        summary: "The IdP's SAML 2.0 metadata: entityID, SSO and SLO endpoints, signing certificates (current first)",
        produces: ['application/samlmetadata+xml'],
      },
    },
    async (_request, reply) => {
      reply.type('application/samlmetadata+xml; charset=utf-8');
      return idpMetadata(services);
    },
  );

  app.get(POST_SCRIPT, { schema: { hide: true } }, async (_request, reply) => {
    reply.type('text/javascript; charset=utf-8');
    return POST_JS;
  });

  /** Parks a checked request and continues by GET (the session cookie is SameSite=Lax). */
  async function continueWith(reply: FastifyReply, pendingId: string): Promise<FastifyReply> {
    return reply.redirect(`/saml/sso?resume=${pendingId}`, 303);
  }

  async function proceed(request: FastifyRequest, reply: FastifyReply, pendingId: string): Promise<FastifyReply> {
    const pending = await parked(services, pendingId);
    const decision = decide(pending, request.kp.session);
    const back = encodeURIComponent(`/saml/sso?resume=${pendingId}`);
    switch (decision.action) {
      case 'login':
        return reply.redirect(`/auth?return=${back}`, 303);
      case 'step_up':
        return reply.redirect(`/auth/step-up?return=${back}`, 303);
      case 'error':
        return sendPostForm(request, reply, await errorResponse(services, pendingId, decision.status));
      default:
        return releaseOrAsk(request, reply, pendingId);
    }
  }

  /**
   * The consent gate (docs/saml.md#consent): an approved or first-party provider gets its
   * assertion; any other gets the approval page naming it and its attributes, and nothing is
   * posted until the person approves. IsPassive forbids the page (saml-core §3.4.1), so it
   * answers a signed NoPassive instead: the same answer as without a session, so a provider
   * cannot probe whether someone is signed in here.
   */
  async function releaseOrAsk(request: FastifyRequest, reply: FastifyReply, pendingId: string): Promise<FastifyReply> {
    const session = request.kp.session!;
    const pending = await parked(services, pendingId);
    const refused = await refuseUnadmitted(request, reply, pendingId, pending, session);
    if (refused) return refused.sent;
    const consent = await samlConsent(services, pending, session);
    if (consent.standing.approved)
      return sendPostForm(request, reply, await issueResponse(services, pendingId, session));
    if (pending.isPassive) return sendPostForm(request, reply, await errorResponse(services, pendingId, 'NoPassive'));
    const approval = await offerApproval(services, 'saml', {
      sessionId: session.id,
      pendingId,
      sources: consent.sources.join(' '),
    });
    return sendOneTap(request, reply, {
      clientName: consent.party.name,
      clientOrigin: new URL(pending.acsUrl).origin,
      username: (await usernameOf(services, session.identityId)) ?? session.identityId,
      scopes: [],
      released: consent.release,
      resources: [],
      hidden: { resume: pendingId, approval },
      formAction: [],
      action: '/saml/sso/approve',
    });
  }

  /**
   * The provider's `access.orgs` (docs/saml.md#who-may-sign-in): an account it does not admit is
   * told why on the same page as an OIDC client's refusal, whose one button posts the provider a
   * signed `Responder/RequestDenied`. IsPassive forbids the page: a signed `Responder/NoPassive`,
   * as for consent, so a provider cannot tell "not a member" from "not signed in". Null when admitted
   * (the reply is wrapped: a FastifyReply is thenable, and awaiting it would wait for the send).
   */
  async function refuseUnadmitted(
    request: FastifyRequest,
    reply: FastifyReply,
    pendingId: string,
    pending: Awaited<ReturnType<typeof parked>>,
    session: NonNullable<FastifyRequest['kp']['session']>,
  ): Promise<{ sent: FastifyReply } | null> {
    const provider = await providerOf(services, pending);
    if ((await samlAdmission(services, provider, session.identityId)).allowed) return null;
    if (pending.isPassive)
      return { sent: sendPostForm(request, reply, await errorResponse(services, pendingId, 'NoPassive')) };
    const approval = await offerApproval(services, 'saml', { sessionId: session.id, pendingId, refused: '1' });
    const sent = sendNotAdmitted(request, reply, {
      clientName: provider.name ?? provider.entityId,
      clientOrigin: new URL(pending.acsUrl).origin,
      username: (await usernameOf(services, session.identityId)) ?? session.identityId,
      admits: accessRuleParts({ orgs: provider.accessOrgs ?? [] }),
      hidden: { resume: pendingId, approval },
      formAction: [],
      action: '/saml/sso/approve',
    });
    return { sent };
  }

  const ssoSchema = {
    tags: ['saml'],
    produces: ['text/html'],
    summary:
      'SAML SSO: an AuthnRequest by HTTP-Redirect, or IdP-initiated with `sp`; signs in or steps up, then posts the signed Response to the registered ACS URL',
    response: { ...errorResponses },
  };
  app.get(
    '/saml/sso',
    {
      exposeHeadRoute: false,
      config: { errorPage: samlRefusalPage, sameOriginReferrer: true },
      schema: { ...ssoSchema, querystring: samlQuery },
    },
    async (request, reply) => {
      const query = request.query as Record<string, string | undefined>;
      if (typeof query.resume === 'string') return await proceed(request, reply, query.resume);
      if (query.SAMLRequest !== undefined) {
        const incoming = redirectMessage(request, query);
        return await proceed(request, reply, await park(services, await receiveAuthnRequest(services, incoming)));
      }
      if (typeof query.sp === 'string')
        return await proceed(
          request,
          reply,
          await park(
            services,
            await idpInitiated(services, query.sp, typeof query.RelayState === 'string' ? query.RelayState : undefined),
          ),
        );
      throw fail('saml_request_invalid', 'send a SAMLRequest (or `sp` for IdP-initiated sign-in)');
    },
  );

  app.post(
    '/saml/sso',
    {
      config: { checksOwnOrigin: true, errorPage: samlRefusalPage, sameOriginReferrer: true },
      schema: {
        ...ssoSchema,
        summary: 'SAML SSO over HTTP-POST: the AuthnRequest is checked, then the browser continues at GET /saml/sso',
        body: samlBody,
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      if (typeof body.SAMLRequest !== 'string') throw fail('saml_request_invalid', 'send a SAMLRequest');
      const incoming: IncomingMessage = {
        binding: 'post',
        message: body.SAMLRequest,
        ...(typeof body.RelayState === 'string' ? { relayState: body.RelayState } : {}),
      };
      return await continueWith(reply, await park(services, await receiveAuthnRequest(services, incoming)));
    },
  );

  app.post(
    '/saml/sso/approve',
    {
      config: { errorPage: samlRefusalPage, sameOriginReferrer: true },
      schema: {
        ...ssoSchema,
        summary:
          "The approval page's answer for a service provider the account has not approved: `decision=allow` records the approval and posts the assertion, `deny` posts a signed RequestDenied; the not-admitted page (the provider's access.orgs) posts `not_admitted`, which is always a RequestDenied",
        body: {
          type: 'object',
          properties: {
            resume: { type: 'string', maxLength: 64 },
            approval: { type: 'string', maxLength: 64 },
            decision: { enum: ['allow', 'deny', 'not_admitted'] },
          },
          additionalProperties: false,
        },
      },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as { resume?: string; approval?: string; decision?: string };
      const session = request.kp.session;
      const { pendingId, approved } = await answerApproval(services, {
        token: body.approval,
        pendingId: body.resume,
        session,
        approve: body.decision === undefined || body.decision === 'allow',
      });
      if (!approved) return sendPostForm(request, reply, await errorResponse(services, pendingId, 'RequestDenied'));
      return sendPostForm(request, reply, await issueResponse(services, pendingId, session!));
    },
  );

  async function logout(request: FastifyRequest, reply: FastifyReply, pendingId: string): Promise<FastifyReply> {
    const pending = await takeParkedLogout(services, pendingId);
    const session = request.kp.session;
    const done = await completeLogout(services, pending, session);
    if (done.ended) clearSessionCookie(app.kp, reply);
    if (done.redirect) return reply.redirect(done.redirect, 303);
    return sendSignedOut(request, reply, done.ended);
  }

  const sloSchema = {
    tags: ['saml'],
    produces: ['text/html'],
    summary:
      "SAML single logout: a LogoutRequest signed by the SP's pinned certificate ends the matching session; the signed LogoutResponse goes to the SP's SLO URL",
    response: { ...errorResponses },
  };
  app.get(
    '/saml/slo',
    {
      exposeHeadRoute: false,
      config: { errorPage: samlRefusalPage },
      schema: { ...sloSchema, querystring: samlQuery },
    },
    async (request, reply) => {
      const query = request.query as Record<string, string | undefined>;
      if (typeof query.resume === 'string') return await logout(request, reply, query.resume);
      if (query.SAMLRequest === undefined) throw fail('saml_request_invalid', 'send a LogoutRequest as SAMLRequest');
      const incoming = redirectMessage(request, query);
      return await logout(request, reply, await parkLogout(services, await receiveLogoutRequest(services, incoming)));
    },
  );

  app.post(
    '/saml/slo',
    {
      config: { checksOwnOrigin: true, errorPage: samlRefusalPage },
      schema: { ...sloSchema, body: samlBody },
    },
    async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      if (typeof body.SAMLRequest !== 'string')
        throw fail('saml_request_invalid', 'send a LogoutRequest as SAMLRequest');
      const incoming: IncomingMessage = {
        binding: 'post',
        message: body.SAMLRequest,
        ...(typeof body.RelayState === 'string' ? { relayState: body.RelayState } : {}),
      };
      const id = await parkLogout(services, await receiveLogoutRequest(services, incoming));
      return reply.redirect(`/saml/slo?resume=${id}`, 303);
    },
  );

  app.post(
    '/saml/keys/rotate',
    {
      schema: {
        tags: ['saml'],
        summary:
          'Rotate the IdP signing key now (admin token): the next key signs, the old certificate stays in the metadata for its retention',
        security: [{ bearerAuth: [] }],
        response: {
          200: okObject({ current: { type: 'string' }, retired: { type: ['string', 'null'] } }, ['current']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      if (actorOf(request, true).kind !== 'operator')
        throw fail('forbidden', 'rotating the IdP key needs the admin token');
      return { ok: true, ...(await samlKeyRing(services).rotate()) };
    },
  );

  // ---- service providers: the operator (admin token) or an org admin (session) ----

  app.get(
    '/saml/providers',
    {
      schema: {
        tags: ['saml'],
        summary: 'The service providers you manage (all of them with the admin token)',
        security: bearerOrSession,
        response: {
          200: okObject({ providers: { type: 'array', items: providerObject } }, ['providers']),
          ...errorResponses,
        },
      },
    },
    async (request) => ({
      ok: true,
      providers: (await listProviders(services, actorOf(request, false))).map(describeProvider),
    }),
  );

  app.post(
    '/saml/providers',
    {
      schema: {
        tags: ['saml'],
        summary: 'Register a SAML service provider (its certificate is pinned)',
        security: bearerOrSession,
        body: providerBody,
        response: { 201: providerReply, ...errorResponses },
      },
    },
    async (request, reply) => {
      const { provider, receipt } = await registerProvider(
        services,
        actorOf(request, true),
        request.body as Record<string, unknown>,
      );
      reply.code(201);
      return { ok: true, provider: describeProvider(provider), ...(receipt ? { receipt } : {}) };
    },
  );

  app.get(
    '/saml/providers/:id',
    {
      schema: {
        tags: ['saml'],
        summary: 'One service provider you manage',
        security: bearerOrSession,
        params: idParams,
        response: { 200: providerReply, ...errorResponses },
      },
    },
    async (request) => ({
      ok: true,
      provider: describeProvider(
        await getProvider(services, actorOf(request, false), (request.params as { id: string }).id),
      ),
    }),
  );

  app.put(
    '/saml/providers/:id',
    {
      schema: {
        tags: ['saml'],
        summary: "Replace a service provider's settings (same body as registration; `revision` optional)",
        security: bearerOrSession,
        params: idParams,
        body: anyBody,
        response: { 200: providerReply, ...errorResponses },
      },
    },
    async (request) => {
      const { provider, receipt } = await updateProvider(
        services,
        actorOf(request, true),
        (request.params as { id: string }).id,
        request.body as Record<string, unknown>,
      );
      return { ok: true, provider: describeProvider(provider), ...(receipt ? { receipt } : {}) };
    },
  );

  app.delete(
    '/saml/providers/:id',
    {
      schema: {
        tags: ['saml'],
        summary: 'Remove a service provider: its requests are refused from now on',
        security: bearerOrSession,
        params: idParams,
        response: {
          200: okObject({ deleted: { const: true }, receipt: receiptField }, ['deleted']),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { receipt } = await deleteProvider(services, actorOf(request, true), (request.params as { id: string }).id);
      return { ok: true, deleted: true, ...(receipt ? { receipt } : {}) };
    },
  );
}
