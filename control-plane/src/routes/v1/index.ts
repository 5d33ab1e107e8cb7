import type { FastifyInstance, FastifyReply } from 'fastify';
import { usernameOf } from '../../accounts/profile.js';
import { offerApproval } from '../../consent/gate.js';
import type { SessionView } from '../../context.js';
import type { StoredClient } from '../../storage/interface.js';
import { sendOneTap } from '../oidc/pages.js';
import { clientLinksOf } from '../../oidc/authorize/views.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { html, page, raw } from '../../pages/layout.js';
import { uiOf } from '../../pages/ui.js';
import { V1_AUTH_CLIENT_JS } from '../../pages/scripts/v1-auth-client.js';
import {
  V1_RELEASE,
  answerV1Approval,
  findV1Client,
  issueV1SessionToken,
  v1Consent,
  v1DeprecationHeaders,
  v1RequestCounter,
  verifyV1SessionToken,
} from '../../v1/bridge.js';
import { errorResponses, okObject } from '../../http/schemas.js';

/**
 * The deprecated v1 bridge (docs/v1-bridge.md). Every answer of this plugin carries the
 * deprecation headers and is counted in `kp_v1_bridge_requests_total`.
 */
export default async function v1Routes(app: FastifyInstance): Promise<void> {
  const services = app.kp;
  const counter = v1RequestCounter(services.metrics);
  const deprecation = v1DeprecationHeaders(services.config);
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.headers(deprecation);
    return payload;
  });

  /** Mints the token for the session and sends the browser to the v1 return URL with it. */
  async function handOver(
    reply: FastifyReply,
    client: StoredClient,
    session: SessionView,
    to: string,
    status: 302 | 303,
  ): Promise<FastifyReply> {
    const { token } = await issueV1SessionToken(services, {
      client,
      identityId: session.identityId,
      sessionId: session.id,
    });
    const target = new URL(to);
    target.searchParams.set('session', token);
    // The token is in the URL (that is v1's flaw): keep it out of caches at least. Referer headers
    // to other origins are never sent (the route's policy, plugins/security-headers.ts).
    reply.header('cache-control', 'no-store');
    return reply.code(status).redirect(target.href);
  }
  app.addHook('onResponse', async (request, reply) => {
    counter.inc({
      endpoint: request.routeOptions.url ?? 'unknown',
      outcome: reply.statusCode < 400 ? 'ok' : 'refused',
    });
  });

  app.get(
    '/auth-client.js',
    {
      schema: {
        tags: ['v1 (deprecated)'],
        summary: 'Deprecated v1 script wiring data-signin, data-signup and data-recover',
        produces: ['text/javascript'],
        deprecated: true,
      },
    },
    async (_request, reply) => {
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300');
      return V1_AUTH_CLIENT_JS;
    },
  );

  app.get<{ Querystring: { to: string } }>(
    '/auth/v1/return',
    {
      // The approval page's form posts back with the session.
      config: { sameOriginReferrer: true },
      schema: {
        tags: ['v1 (deprecated)'],
        deprecated: true,
        summary: 'Hands a v1 session token to a registered v1 return URL (signs in first when needed)',
        querystring: {
          type: 'object',
          required: ['to'],
          properties: { to: { type: 'string', minLength: 1, maxLength: 2000 } },
        },
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const to = request.query.to;
      if (!/^https?:\/\//i.test(to)) throw fail('invalid_request', 'to must be an absolute http(s) URL');
      const client = await findV1Client(services, to);
      const session = request.kp.session;
      if (!session) {
        return reply
          .code(303)
          .redirect(`/auth?return=${encodeURIComponent(`/auth/v1/return?to=${encodeURIComponent(to)}`)}`);
      }
      // The consent gate: the account's id goes only to a first-party client or one it approved.
      if ((await v1Consent(services, client, session.identityId)).approved)
        return handOver(reply, client, session, to, 302);
      const approval = await offerApproval(services, 'v1', { sessionId: session.id, to });
      const origin = new URL(to).origin;
      return sendOneTap(request, reply, {
        clientName: client.metadata.client_name ?? origin,
        clientOrigin: origin,
        ...clientLinksOf(client.metadata),
        username: (await usernameOf(services, session.identityId)) ?? session.identityId,
        scopes: [...V1_RELEASE.scopes],
        resources: [],
        hidden: { to, approval },
        formAction: [origin],
        action: '/auth/v1/approve',
      });
    },
  );

  app.post<{ Body: { to: string; approval?: string; decision?: 'allow' | 'deny' } }>(
    '/auth/v1/approve',
    {
      schema: {
        tags: ['v1 (deprecated)'],
        deprecated: true,
        summary:
          "The approval page's answer for a v1 client the account has not approved: `allow` records it and hands the token over, `deny` returns with `error=access_denied`",
        body: {
          type: 'object',
          required: ['to'],
          additionalProperties: false,
          properties: {
            to: { type: 'string', minLength: 1, maxLength: 2000 },
            approval: { type: 'string', maxLength: 64 },
            decision: { enum: ['allow', 'deny'] },
          },
        },
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const { to, approval, decision } = request.body;
      const session = request.kp.session;
      const approve = decision !== 'deny';
      const client = await answerV1Approval(services, { token: approval, to, session, approve });
      if (approve) return handOver(reply, client, session!, to, 303);
      const declined = new URL(to);
      declined.searchParams.set('error', 'access_denied');
      return reply.code(303).redirect(declined.href);
    },
  );

  app.post<{ Body: { token: string } }>(
    '/auth/verify-session',
    {
      schema: {
        tags: ['v1 (deprecated)'],
        deprecated: true,
        summary: 'Redeems a v1 session token server to server',
        body: {
          type: 'object',
          required: ['token'],
          additionalProperties: false,
          properties: { token: { type: 'string', minLength: 1, maxLength: 4096 } },
        },
        response: { 200: okObject({ identityId: { type: 'string' } }, ['identityId']), ...errorResponses },
      },
    },
    async (request, reply) => {
      const { identityId } = await verifyV1SessionToken(services, request.body.token);
      reply.header('cache-control', 'no-store');
      return { ok: true, identityId };
    },
  );

  app.get(
    '/auth/v1/migrate',
    {
      schema: {
        tags: ['v1 (deprecated)'],
        summary: 'How a v1 integrator moves to v2 (OIDC code flow with PKCE)',
        produces: ['text/html'],
      },
    },
    async (request, reply) => {
      const issuer = services.config.issuer;
      reply.type('text/html; charset=utf-8');
      const ui = uiOf(request);
      const code = { code: (inner: string) => `<code>${inner}</code>` };
      const step = (key: Parameters<typeof ui.rich>[0], values: Record<string, string> = {}) =>
        raw(ui.rich(key, { ...code, link: (inner) => `<a href="/apps">${inner}</a>` }, values));
      return page({
        title: ui.t('v1_migrate.title'),
        nonce: request.kp.cspNonce,
        ui,
        body: html`<h1>${ui.t('v1_migrate.heading')}</h1>
<p>${raw(ui.rich('v1_migrate.intro', { ...code, strong: (inner) => `<strong>${inner}</strong>` }, { sunset: services.config.v1.sunset }))}</p>
<h2>${ui.t('v1_migrate.steps')}</h2>
<ol>
  <li>${step('v1_migrate.step.redirect', { scope: '"scope": "openid profile email offline_access"', endpoint: 'PUT /register/{client_id}' })}</li>
  <li>${step('v1_migrate.step.script', { script: `<script src="${issuer}/auth-client.js">` })}</li>
  <li>${step('v1_migrate.step.sdk', { install: 'npm install @keyplane/sdk', create: `createClient({issuer: "${issuer}", clientId, clientSecret, redirectUri})`, discovery: `${issuer}/.well-known/openid-configuration` })}</li>
  <li>${step('v1_migrate.step.sub')}</li>
  <li>${step('v1_migrate.step.remove')}</li>
</ol>
<p>${step('v1_migrate.headers')}</p>`,
      });
    },
  );
}
