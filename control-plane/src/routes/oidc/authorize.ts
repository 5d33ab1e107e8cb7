import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { buildRedirect, type RawParams } from '#lib/oauth/authorization-request.js';
import { approveAuthorization, authorize } from '../../oidc/authorize/authorize.js';
import type { AuthorizeBrowser, AuthorizeOutcome } from '../../oidc/authorize/request.js';
import { limitPerIp } from '../../http/code-guard.js';
import { errorResponses } from '../../http/schemas.js';
import { adoptUiLocales } from '../../pages/ui.js';
import {
  FORM_POST_JS,
  FORM_POST_SCRIPT,
  WEB_MESSAGE_JS,
  WEB_MESSAGE_SCRIPT,
  sendAccountChoice,
  sendFormPost,
  sendNotAdmitted,
  sendOneTap,
  sendWebMessage,
} from './pages.js';
import { AUTHORIZE_DISCOVERY, AUTHORIZE_QUERY } from './authorize-documents.js';

/**
 * `GET|POST /auth/authorize` (RFC 6749 §4.1, OIDC Core §3.1.2): the operation in
 * oidc/authorize/ decides, this route sends its outcome: a code or a refusal to the verified
 * redirect URI by the response mode, the sign-in or step-up page, or one of the authorization
 * pages. A refusal before the redirect URI is verified is thrown to the error handler, which
 * shows it on a page (`errorPage: true`).
 */
export default async function authorizeRoutes(app: FastifyInstance): Promise<void> {
  for (const [path, script, summary] of [
    [WEB_MESSAGE_SCRIPT, WEB_MESSAGE_JS, 'Script of the web_message response page'],
    [FORM_POST_SCRIPT, FORM_POST_JS, 'Script of the form_post response page'],
  ] as const) {
    app.get(
      path,
      { config: { cache: 'public, max-age=300' }, schema: { tags: ['oidc'], summary, hide: true } },
      async (_request, reply) => {
        reply.type('text/javascript; charset=utf-8');
        return script;
      },
    );
  }

  function browserOf(request: FastifyRequest, reply: FastifyReply): AuthorizeBrowser {
    return {
      session: request.kp.session,
      adoptUiLocales: (uiLocales) => adoptUiLocales(app.kp, request, reply, uiLocales),
    };
  }

  function send(request: FastifyRequest, reply: FastifyReply, outcome: AuthorizeOutcome): FastifyReply {
    switch (outcome.kind) {
      case 'respond': {
        const { target, params } = outcome;
        if (outcome.refused) request.log.info({ reason: outcome.refused }, 'authorization refused');
        if (target.responseMode === 'web_message')
          return sendWebMessage(request, reply, new URL(target.redirectUri).origin, params);
        if (target.responseMode === 'form_post') return sendFormPost(request, reply, target.redirectUri, params);
        return reply.redirect(buildRedirect(target.redirectUri, params), request.method === 'POST' ? 303 : 302);
      }
      case 'redirect':
        return reply.redirect(outcome.location, 303);
      case 'account_choice':
        return sendAccountChoice(request, reply, outcome.view);
      case 'one_tap':
        return sendOneTap(request, reply, outcome.view);
      case 'not_admitted':
        return sendNotAdmitted(request, reply, outcome.view);
    }
  }

  const schema = {
    tags: ['oidc'],
    summary:
      'OIDC authorization endpoint: code flow with PKCE S256 (redirects, or shows the sign-in, step-up or one-tap page)',
    produces: ['text/html'],
    response: { ...errorResponses },
  };

  // No automatic HEAD route: a HEAD must never issue a code.
  app.get(
    '/auth/authorize',
    {
      exposeHeadRoute: false,
      config: { discovery: AUTHORIZE_DISCOVERY, errorPage: true },
      schema: { ...schema, querystring: AUTHORIZE_QUERY },
    },
    async (request, reply) => {
      // Its own per-address bucket in shared state, like every credential path (docs/security.md).
      await limitPerIp(app.kp, request, 'authorize');
      return send(request, reply, await authorize(app.kp, browserOf(request, reply), request.query as RawParams));
    },
  );

  app.post(
    '/auth/authorize',
    {
      config: { errorPage: true },
      schema: {
        ...schema,
        summary: "OIDC authorization by POST (RFC 6749 §3.1), and the one-tap form's approval",
        body: { type: 'object', additionalProperties: true },
      },
    },
    async (request, reply) => {
      await limitPerIp(app.kp, request, 'authorize');
      const body = (request.body ?? {}) as RawParams;
      const browser = browserOf(request, reply);
      const outcome =
        body.approval !== undefined
          ? await approveAuthorization(app.kp, browser, body)
          : await authorize(app.kp, browser, body);
      return send(request, reply, outcome);
    },
  );
}
