import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { buildRedirect } from '#lib/oauth/authorization-request.js';
import { matchRedirectUri } from '#lib/oauth/redirect-uri.js';
import { findClient } from '../../clients/find-client.js';
import { logOut } from '../../sessions/end-session.js';
import { clearSessionCookie } from '../../http/session-cookies.js';
import type { StoredClient } from '../../storage/interface.js';
import { errorResponses } from '../../http/schemas.js';
import { FRONTCHANNEL_LOGOUT_JS, FRONTCHANNEL_LOGOUT_SCRIPT, sendLogoutConfirm, sendSignedOut } from './pages.js';
import { verifyIdTokenHint } from '../../oidc/tokens.js';
import { upstreamLogoutOf, upstreamLogoutUrl, type LogoutContinuation } from '../../federation/upstream-logout.js';

type Params = Record<string, unknown>;

/** Where a logout goes once the session ended: the app's redirect or the signed-out page. */
function afterLogout(
  redirect: string | undefined,
  state: string | undefined,
  hinted: boolean,
  frontchannel: string[],
  client: StoredClient | null,
): LogoutContinuation {
  if (redirect === undefined) return { view: { frontchannel } };
  const target = buildRedirect(redirect, state !== undefined ? { state } : {});
  // Anyone may register a client with any post_logout_redirect_uri, so only an id_token_hint
  // (which proves the client) earns a redirect; a bare client_id gets a link the user may follow.
  // Apps with a front-channel logout URL are told first, in the signed-out page's iframes.
  if (hinted && frontchannel.length === 0) return { redirect: target };
  return {
    view: {
      next: { href: target, label: client!.metadata.client_name ?? new URL(redirect).origin, auto: hinted },
      frontchannel,
    },
  };
}

/** Sends what {@link afterLogout} decided (here, or after the upstream's logout). */
export function sendAfterLogout(request: FastifyRequest, reply: FastifyReply, then: LogoutContinuation): FastifyReply {
  if (then.redirect !== undefined) return reply.redirect(then.redirect, request.method === 'POST' ? 303 : 302);
  return sendSignedOut(request, reply, then.view ?? {});
}

function text(params: Params, name: string): string | undefined {
  const value = params[name];
  return typeof value === 'string' && value.length > 0 && value.length <= 8192 ? value : undefined;
}

/**
 * RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): `GET /auth/logout` with
 * `id_token_hint`, `post_logout_redirect_uri` (exact match against the client's registered
 * `post_logout_redirect_uris`), `client_id` and `state`. A hint for the signed-in account ends the
 * session at once; without one the user confirms on a page, so a third-party link cannot sign
 * anyone out. The browser is redirected to the client only when the hint proves the client;
 * otherwise the signed-out page links to it (docs/security.md "Open redirects").
 */
export default async function logoutRoutes(app: FastifyInstance): Promise<void> {
  async function handle(
    request: FastifyRequest,
    reply: FastifyReply,
    params: Params,
    confirmed: boolean,
  ): Promise<FastifyReply> {
    const hintValue = text(params, 'id_token_hint');
    const hint = hintValue ? await verifyIdTokenHint(app.kp, hintValue) : null;
    if (hintValue && !hint) throw fail('invalid_request', 'The id_token_hint was not issued by this server.');
    const clientIdParam = text(params, 'client_id');
    if (hint && clientIdParam && clientIdParam !== hint.aud)
      throw fail('invalid_request', 'client_id differs from the audience of id_token_hint.');
    const clientId = clientIdParam ?? hint?.aud;
    const client: StoredClient | null = clientId ? await findClient(app.kp, clientId) : null;
    if (clientId && !client) throw fail('invalid_request', 'The app (client_id) is not registered here.');
    const redirect = text(params, 'post_logout_redirect_uri');
    if (redirect !== undefined) {
      if (!client)
        throw fail('invalid_request', 'post_logout_redirect_uri needs id_token_hint or client_id to identify the app.');
      if (!matchRedirectUri(client.metadata.post_logout_redirect_uris, redirect))
        throw fail(
          'invalid_request',
          'post_logout_redirect_uri is not registered for this app (it must match exactly).',
        );
    }
    const state = text(params, 'state');
    const session = request.kp.session;
    const hintMatches = session !== undefined && hint !== null && hint.sub === session.identityId;
    if (session && !hintMatches && !confirmed) {
      const hidden: Record<string, string> = {};
      for (const name of ['client_id', 'post_logout_redirect_uri', 'state'] as const) {
        const value = name === 'client_id' ? clientId : text(params, name);
        if (value !== undefined) hidden[name] = value;
      }
      return sendLogoutConfirm(request, reply, hidden);
    }
    let frontchannel: string[] = [];
    const upstream = session ? await upstreamLogoutOf(app.kp, session.id) : null;
    if (session) {
      const ended = await logOut(
        app.kp,
        { identityId: session.identityId, sessionId: session.id },
        client?.clientId ?? null,
      );
      frontchannel = ended.frontchannelLogoutUris;
      clearSessionCookie(app.kp, reply);
    }
    const then = afterLogout(redirect, state, hint !== null, frontchannel, client);
    // A session signed in through a connection signs out at its identity provider next, which
    // sends the browser back to GET /federation/{connectionId}/logged-out to go on from here.
    const atUpstream = upstream && (await upstreamLogoutUrl(app.kp, upstream, then));
    if (atUpstream) return reply.redirect(atUpstream, request.method === 'POST' ? 303 : 302);
    return sendAfterLogout(request, reply, then);
  }

  app.get(
    FRONTCHANNEL_LOGOUT_SCRIPT,
    {
      config: { cache: 'public, max-age=300' },
      schema: { tags: ['oidc'], summary: 'Script of the signed-out page with front-channel logout', hide: true },
    },
    async (_request, reply) => {
      reply.type('text/javascript; charset=utf-8');
      return FRONTCHANNEL_LOGOUT_JS;
    },
  );

  const schema = {
    tags: ['oidc'],
    summary: 'RP-initiated logout: ends the session and returns to a registered post_logout_redirect_uri',
    produces: ['text/html'],
    response: { ...errorResponses },
  };
  app.get(
    '/auth/logout',
    {
      exposeHeadRoute: false,
      config: {
        errorPage: true,
        discovery: {
          endpoint: 'end_session_endpoint',
          // OpenID Connect Back-Channel Logout 1.0 §2.1: logout tokens go to registered
          // backchannel_logout_uri values, and always carry sid.
          // Front-Channel Logout 1.0 §3: the same for frontchannel_logout_uri, with iss and sid.
          metadata: {
            backchannel_logout_supported: true,
            backchannel_logout_session_supported: true,
            frontchannel_logout_supported: true,
            frontchannel_logout_session_supported: true,
          },
        },
      },
      schema,
    },
    async (request, reply) => handle(request, reply, request.query as Params, false),
  );
  // The confirmation form posts here from our own origin (the session plugin checks Origin).
  app.post(
    '/auth/logout',
    { config: { errorPage: true }, schema: { ...schema, body: { type: 'object', additionalProperties: true } } },
    async (request, reply) => handle(request, reply, (request.body ?? {}) as Params, true),
  );
}
