import type { FastifyInstance, FastifyReply } from 'fastify';
import { usernameOf } from '../../accounts/profile.js';
import { offerApproval } from '../../consent/gate.js';
import type { SessionView } from '../../context.js';
import type { StoredClient } from '../../storage/types.js';
import { clientLinksOf, sameOriginReferrer, sendOneTap } from '../oidc/pages.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { html, page } from '../../pages/layout.js';
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
    // The approval page's form posts back here: its Origin must reach us (see oidc/pages.ts).
    if (sameOriginReferrer.has(reply)) reply.header('referrer-policy', 'same-origin');
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
    // The token is in the URL (that is v1's flaw): keep it out of Referer headers and caches at least.
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
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
      return page({
        title: 'Moving from v1 to v2',
        nonce: request.kp.cspNonce,
        body: html`<h1>Moving from the v1 script bridge to v2</h1>
<p>The v1 bridge (<code>auth-client.js</code>, <code>?return=</code> with a <code>session</code> token in your URL, <code>POST /auth/verify-session</code>) is deprecated and will be removed after <strong>${services.config.v1.sunset}</strong>. Its token travels in a URL, where logs, history and Referer headers can keep it; v2 never does that.</p>
<h2>The steps</h2>
<ol>
  <li>Keep your v1 return URL registered: it becomes your OIDC <code>redirect_uri</code> (exact match). Add <code>"scope": "openid profile email offline_access"</code> and the <code>refresh_token</code> grant if you want long sessions (<code>PUT /register/{client_id}</code> with your registration access token, or on <a href="/apps">/apps</a>).</li>
  <li>Replace <code>&lt;script src="${issuer}/auth-client.js"&gt;</code> and its <code>data-signin</code> buttons with a link to your own <code>/login</code> route.</li>
  <li>On the server, use the SDK (<code>npm install @keyplane/sdk</code>): <code>createClient({issuer: "${issuer}", clientId, clientSecret, redirectUri})</code> and its fastify or Express middleware, or any certified OpenID Connect library: authorization code flow with PKCE S256 against <code>${issuer}/.well-known/openid-configuration</code>.</li>
  <li>Where you called <code>POST /auth/verify-session</code>, read the verified ID token's <code>sub</code> instead: it is the same <code>identityId</code>, so your user records stay as they are.</li>
  <li>Remove <code>v1_bridge: true</code> from your registration. Until you do, watch <code>kp_v1_bridge_requests_total</code> on <code>/metrics</code> fall to zero.</li>
</ol>
<p>Every v1 answer carries <code>Deprecation</code> and <code>Sunset</code> headers (RFC 9745, RFC 8594) and a <code>Link</code> to this page.</p>`,
      });
    },
  );
}
