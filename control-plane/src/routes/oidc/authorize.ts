import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDependencyUnavailable } from '#lib/errors/dependency-outage.js';
import { authorizationErrorParams, type OAuthErrorCode } from '#lib/oauth/errors.js';
import {
  buildRedirect,
  checkAuthorizationRequest,
  decideAuthorization,
  errorTargetOf,
  mergeApproval,
  readClientId,
  type AuthorizationRequest,
  type ErrorTarget,
  type RawParams,
} from '#lib/oauth/authorization-request.js';
import { randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import { usernameOf } from '../../accounts/profile.js';
import { fail, isKeyplaneError } from '#lib/errors/keyplane-error.js';
import { documentHostOf, resolveClient } from '../../clients/client-id-documents.js';
import { requestableResources } from '../../oidc/mcp-resources.js';
import { approvalOf } from '../../consent/gate.js';
import { issueAuthorizationCode, type ApprovalKind } from '../../oidc/issue-code.js';
import type { StoredClient } from '../../storage/types.js';
import { limitPerIp } from '../../http/code-guard.js';
import { errorResponses } from '../../http/schemas.js';
import {
  FORM_POST_JS,
  FORM_POST_SCRIPT,
  WEB_MESSAGE_JS,
  WEB_MESSAGE_SCRIPT,
  clientLinksOf,
  sendAccountChoice,
  sendFormPost,
  sendNotAdmitted,
  sendOneTap,
  sendWebMessage,
} from './pages.js';
import { accessRuleParts } from '#lib/access/evaluate-access.js';
import { checkSignInAccess } from '../../clients/sign-in-access.js';
import { authorizationClientOf } from '../../oidc/authorization-client.js';
import { resolveAuthorizationRequest } from '../../oidc/resolve-authorization-request.js';
import { verifyIdTokenHint } from '../../oidc/tokens.js';
import { adoptUiLocales } from '../../pages/ui.js';
import { AUTHORIZE_DISCOVERY, AUTHORIZE_QUERY } from './authorize-documents.js';

/** A request waiting for sign-in or step-up lives this long (ms). */
const PENDING_TTL_MS = 15 * 60_000;
/** What the client hears when its `access.orgs` refuse the account. */
const NOT_ADMITTED = 'this account is not a member of an organization this client admits';
/** A one-tap page's approval token lives this long (ms). */
const APPROVAL_TTL_MS = 10 * 60_000;
/** Parameters carried through the pending request and the one-tap form. */
const CARRIED = [
  'client_id',
  'redirect_uri',
  'response_type',
  'response_mode',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  'acr_values',
  'dpop_jkt',
  'resource',
  'id_token_hint',
];

interface Pending {
  params: Record<string, string>;
  loginAfter?: number;
  /** The person chose the signed-in account on the account-choice page (prompt=select_account). */
  accountChosen?: boolean;
}

/** The parameters worth keeping (single strings only; a repeated one is kept as an array so the check refuses it). */
function carried(params: RawParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of CARRIED) {
    const value = params[name];
    if (typeof value === 'string') out[name] = value;
  }
  return out;
}

function targetOf(authz: AuthorizationRequest): ErrorTarget {
  return {
    redirectUri: authz.redirectUri,
    responseMode: authz.responseMode,
    ...(authz.state !== undefined ? { state: authz.state } : {}),
  };
}

/**
 * Where the approval form's answer goes, for CSP form-action and the page: the redirect URI's
 * origin, or for a native app's private-use scheme (RFC 8252 §7.1, origin "null") its scheme.
 */
function formTargetOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.origin === 'null' ? url.protocol : url.origin;
}

function digestOf(params: Record<string, string>): string {
  return sha256Hex(JSON.stringify(CARRIED.map((name) => params[name] ?? null)));
}

/** A Client ID Metadata Document that cannot be used: its reason on the refusal page, never a redirect. */
function metadataRefused(error: unknown): never {
  if (!isKeyplaneError(error) || error.reason !== 'invalid_client') throw error;
  throw fail('invalid_client', `The app's metadata document was refused. ${error.message}.`, {
    status: 400,
    cause: error,
  });
}

/**
 * `GET|POST /auth/authorize` (RFC 6749 §4.1, OIDC Core §3.1.2): code flow with PKCE S256 only,
 * exact redirect URIs, RFC 9207 `iss` on every response, `response_mode` query, form_post or
 * web_message, signed request objects, sign-in, account choice and step-up resumed server-side,
 * and the one-tap page.
 */
export default async function authorizeRoutes(app: FastifyInstance): Promise<void> {
  const { state, config } = app.kp;
  const { issuer } = config;

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

  /** Sends a response (code or error) to the verified redirect URI, by the requested mode. */
  function respond(
    request: FastifyRequest,
    reply: FastifyReply,
    target: ErrorTarget,
    params: Record<string, string>,
  ): FastifyReply {
    if (target.responseMode === 'web_message')
      return sendWebMessage(request, reply, new URL(target.redirectUri).origin, params);
    if (target.responseMode === 'form_post') return sendFormPost(request, reply, target.redirectUri, params);
    return reply.redirect(buildRedirect(target.redirectUri, params), request.method === 'POST' ? 303 : 302);
  }

  function respondError(
    request: FastifyRequest,
    reply: FastifyReply,
    target: ErrorTarget,
    error: OAuthErrorCode,
    description: string,
  ): FastifyReply {
    request.log.info({ reason: error }, 'authorization refused');
    return respond(
      request,
      reply,
      target,
      authorizationErrorParams({
        error,
        description,
        ...(target.state !== undefined ? { state: target.state } : {}),
        iss: issuer,
      }),
    );
  }

  /** The request's client, or the refusal the error handler shows on a page (never redirected). */
  async function clientOf(params: RawParams): Promise<StoredClient> {
    const clientId = readClientId(params);
    const client = clientId ? await resolveClient(app.kp, clientId).catch(metadataRefused) : null;
    if (client) return client;
    throw fail(
      'unknown_client',
      clientId ? 'The app (client_id) is not registered here.' : 'The request does not name an app (client_id).',
    );
  }

  /**
   * Checks the request against its client's registration. A refusal is already answered: on a
   * page while the redirect URI is unverified, else at that URI.
   */
  type Checked = { client: StoredClient; authz: AuthorizationRequest; target: ErrorTarget; mcpResource: boolean };

  async function checkRequest(
    request: FastifyRequest,
    reply: FastifyReply,
    params: RawParams,
  ): Promise<{ refused: FastifyReply } | Checked> {
    const client = await clientOf(params);
    const resources = await requestableResources(app.kp, client, params.resource);
    const check = checkAuthorizationRequest(params, authorizationClientOf(client, resources));
    if (!check.ok) {
      if (check.target === null)
        throw fail('unknown_client', `The redirect address is not registered for this app. ${check.description}.`);
      return { refused: respondError(request, reply, check.target, check.error, check.description) };
    }
    // The popup is in-place sign-in: only for a client that turned it on (docs/in-place.md).
    if (check.request.responseMode === 'web_message' && client.metadata.in_place !== true) {
      return {
        refused: respondError(
          request,
          reply,
          { ...targetOf(check.request), responseMode: 'query' },
          'invalid_request',
          'response_mode=web_message needs in-place sign-in turned on (client metadata in_place: true)',
        ),
      };
    }
    // docs/gateway.md#mcp-routes: an MCP route's resource goes to any client, so the person
    // always sees who asks for it (no remembered approval, no first-party skip).
    const requested = check.request.resource;
    const mcpResource =
      requested !== undefined && !client.metadata.resources.includes(requested) && resources.includes(requested);
    return { client, authz: check.request, target: targetOf(check.request), mcpResource };
  }

  async function issueCode(
    request: FastifyRequest,
    reply: FastifyReply,
    client: StoredClient,
    authz: AuthorizationRequest,
    approval: ApprovalKind,
  ): Promise<FastifyReply> {
    const code = await issueAuthorizationCode(app.kp, request.kp.session!, client, authz, approval);
    return respond(request, reply, targetOf(authz), {
      code,
      ...(authz.state !== undefined ? { state: authz.state } : {}),
      iss: issuer,
    });
  }

  async function park(params: Record<string, string>, loginAfter?: number, accountChosen = false): Promise<string> {
    const id = randomToken(24);
    const pending: Pending = {
      params,
      ...(loginAfter !== undefined ? { loginAfter } : {}),
      ...(accountChosen ? { accountChosen } : {}),
    };
    await state.set(`oidc:pending:${id}`, JSON.stringify(pending), PENDING_TTL_MS);
    return id;
  }

  async function handle(request: FastifyRequest, reply: FastifyReply, incoming: RawParams): Promise<FastifyReply> {
    // Its own per-address bucket in shared state, like every credential path (docs/security.md).
    await limitPerIp(app.kp, request, 'authorize');
    let params: RawParams;
    let loginAfter: number | undefined;
    let accountChosen = false;
    const resume = incoming.resume;
    if (typeof resume === 'string') {
      // A parked request was resolved (request objects verified) before it was parked.
      const stored = /^[A-Za-z0-9_-]{32}$/.test(resume) ? await state.get(`oidc:pending:${resume}`) : null;
      if (!stored)
        throw fail('invalid_request', 'This sign-in request has expired. Go back to the app and start again.');
      const pending = JSON.parse(stored) as Pending;
      params = pending.params;
      loginAfter = pending.loginAfter;
      accountChosen = pending.accountChosen === true;
    } else {
      // The plain parameters' ui_locales serves the pages shown before the request is resolved;
      // the resolved request's (a pushed request's, a request object's) wins below.
      adoptUiLocales(app.kp, request, reply, incoming.ui_locales);
      const client = await clientOf(incoming);
      const resolved = await resolveAuthorizationRequest(app.kp, client, incoming);
      if (!resolved.ok) {
        // Only a redirect URI that the plain parameters name and the client registered gets the error.
        const errorTarget = errorTargetOf(incoming, authorizationClientOf(client));
        if (!errorTarget) throw fail('invalid_request', `The request object was refused: ${resolved.description}.`);
        return respondError(
          request,
          reply,
          errorTarget.responseMode === 'web_message' ? { ...errorTarget, responseMode: 'query' } : errorTarget,
          resolved.error,
          resolved.description,
        );
      }
      params = resolved.params;
      // After a resume the cookie carries it, and the switcher's choice since then stays.
      if (params.ui_locales !== incoming.ui_locales) adoptUiLocales(app.kp, request, reply, params.ui_locales);
    }

    const checked = await checkRequest(request, reply, params);
    if ('refused' in checked) return checked.refused;
    return atRedirectUri(request, reply, checked.target, () =>
      decide(request, reply, checked, params, loginAfter, accountChosen),
    );
  }

  /**
   * Runs what follows the check of the redirect URI. PostgreSQL or Redis going away now is told
   * to the client as `temporarily_unavailable` (RFC 6749 §4.1.2.1: the code exists because a 503
   * cannot travel through a redirect); before the URI is verified it is a 503 here.
   */
  async function atRedirectUri(
    request: FastifyRequest,
    reply: FastifyReply,
    target: ErrorTarget,
    answer: () => Promise<FastifyReply>,
  ): Promise<FastifyReply> {
    try {
      return await answer();
    } catch (error) {
      if (!isDependencyUnavailable(error)) throw error;
      return respondError(
        request,
        reply,
        target,
        'temporarily_unavailable',
        'the sign-in is unavailable for a moment; try again',
      );
    }
  }

  async function decide(
    request: FastifyRequest,
    reply: FastifyReply,
    checked: Checked,
    params: RawParams,
    loginAfter: number | undefined,
    accountChosen: boolean,
  ): Promise<FastifyReply> {
    const { client, authz, target } = checked;
    let hintSubject: string | undefined;
    if (authz.idTokenHint !== undefined) {
      // OIDC Core §3.1.2.1: an ID token we issued to this client; an expired one still names the account.
      const hint = await verifyIdTokenHint(app.kp, authz.idTokenHint);
      if (!hint || hint.aud !== client.clientId)
        return respondError(
          request,
          reply,
          target,
          'invalid_request',
          'id_token_hint is not an ID token this server issued to this client',
        );
      hintSubject = hint.sub;
    }
    const session = request.kp.session;
    const now = app.kp.now();
    const approval = session ? await approvalOf(app.kp, session.identityId, client.clientId) : null;
    const decision = decideAuthorization({
      request:
        checked.mcpResource && !authz.prompt.includes('none')
          ? { ...authz, prompt: [...authz.prompt, 'consent'] }
          : authz,
      now,
      approval: checked.mcpResource ? null : approval,
      firstParty: client.metadata.first_party === true && !checked.mcpResource,
      session: session
        ? { identityId: session.identityId, assurance: session.assurance, authTime: session.authTime }
        : undefined,
      ...(loginAfter !== undefined ? { loginAfter } : {}),
      ...(hintSubject !== undefined ? { hintSubject } : {}),
      accountChosen,
    });
    if ((decision.action === 'issue' || decision.action === 'consent') && session) {
      const refused = await refuseUnadmitted(request, reply, checked, params, session);
      if (refused) return refused;
    }
    switch (decision.action) {
      case 'refuse':
        return respondError(request, reply, target, decision.error, decision.description);
      case 'issue':
        return issueCode(request, reply, client, authz, decision.approval);
      case 'login': {
        const id = await park(carried(params), loginAfter ?? now);
        return reply.redirect(`/auth?return=${encodeURIComponent(`/auth/authorize?resume=${id}`)}`, 303);
      }
      case 'select_account': {
        // One session per browser: continue with this account, or sign in to another (which
        // replaces this session). Two parked copies of the request, one for each answer.
        const hidden = carried(params);
        const stay = await park(hidden, loginAfter, true);
        const other = await park(hidden, loginAfter ?? now);
        const username = await usernameOf(app.kp, session!.identityId);
        return sendAccountChoice(request, reply, {
          clientName: client.metadata.client_name ?? new URL(authz.redirectUri).origin,
          username: username ?? session!.identityId,
          continueHref: `/auth/authorize?resume=${stay}`,
          anotherHref: `/auth?return=${encodeURIComponent(`/auth/authorize?resume=${other}`)}`,
        });
      }
      case 'step_up': {
        // The step-up may also stand for the fresh sign-in that prompt=login or max_age asked for.
        const id = await park(carried(params), loginAfter ?? now);
        return reply.redirect(`/auth/step-up?return=${encodeURIComponent(`/auth/authorize?resume=${id}`)}`, 303);
      }
      case 'consent': {
        const hidden = carried(params);
        const approval = randomToken(24);
        await state.set(
          `oidc:approval:${approval}`,
          JSON.stringify({ sessionId: session!.id, digest: digestOf(hidden) }),
          APPROVAL_TTL_MS,
        );
        const username = await usernameOf(app.kp, session!.identityId);
        const origin = new URL(authz.redirectUri).origin;
        const documentHost = documentHostOf(client);
        return sendOneTap(request, reply, {
          clientName: client.metadata.client_name ?? documentHost ?? origin,
          clientOrigin: formTargetOf(authz.redirectUri),
          ...(documentHost !== null ? { unverifiedHost: documentHost } : {}),
          ...clientLinksOf(client.metadata),
          username: username ?? session!.identityId,
          scopes: authz.scopes,
          resources: authz.resource !== undefined ? [authz.resource] : [],
          hidden: { ...hidden, approval },
          formAction: [formTargetOf(authz.redirectUri)],
        });
      }
    }
  }

  /**
   * The client's `access.orgs` (docs/orgs.md#who-may-sign-in-to-an-app): an account they do not
   * admit is told why on a page whose form answers the client `access_denied` (with
   * `prompt=none` there is no page: the answer goes at once). Null when the account is admitted.
   */
  async function refuseUnadmitted(
    request: FastifyRequest,
    reply: FastifyReply,
    checked: { client: StoredClient; authz: AuthorizationRequest; target: ErrorTarget },
    params: RawParams,
    session: { id: string; identityId: string },
  ): Promise<FastifyReply | null> {
    const { client, authz, target } = checked;
    const orgs = client.metadata.access.orgs;
    const transport = authz.responseMode === 'web_message' ? 'popup' : 'redirect';
    const access = await checkSignInAccess(app.kp, { id: client.clientId, orgs }, session.identityId, transport);
    if (access.allowed) return null;
    if (authz.prompt.includes('none')) return respondError(request, reply, target, 'access_denied', NOT_ADMITTED);
    const hidden = carried(params);
    const approval = randomToken(24);
    await state.set(
      `oidc:approval:${approval}`,
      JSON.stringify({ sessionId: session.id, digest: digestOf(hidden) }),
      APPROVAL_TTL_MS,
    );
    const origin = new URL(authz.redirectUri).origin;
    return sendNotAdmitted(request, reply, {
      clientName: client.metadata.client_name ?? origin,
      clientOrigin: origin,
      username: (await usernameOf(app.kp, session.identityId)) ?? session.identityId,
      admits: accessRuleParts({ orgs }),
      hidden: { ...hidden, approval },
      formAction: [formTargetOf(authz.redirectUri)],
    });
  }

  /** The one-tap form came back: check its approval token (one use, this session, these exact parameters). */
  async function approve(request: FastifyRequest, reply: FastifyReply, body: RawParams): Promise<FastifyReply> {
    await limitPerIp(app.kp, request, 'authorize');
    const params = carried(body);
    const checked = await checkRequest(request, reply, params);
    if ('refused' in checked) return checked.refused;
    const { client, authz, target } = checked;
    const token = body.approval;
    const stored =
      typeof token === 'string' && /^[A-Za-z0-9_-]{32}$/.test(token)
        ? await state.take(`oidc:approval:${token}`)
        : null;
    const session = request.kp.session;
    const grant = stored ? (JSON.parse(stored) as { sessionId: string; digest: string }) : null;
    if (!session || !grant || grant.sessionId !== session.id || grant.digest !== digestOf(params)) {
      throw fail(
        'access_denied',
        'This approval has expired or belongs to another sign-in. Go back to the app and start again.',
      );
    }
    if (body.decision === 'deny') return respondError(request, reply, target, 'access_denied', 'the user declined');
    if (body.decision === 'not_admitted') return respondError(request, reply, target, 'access_denied', NOT_ADMITTED);
    // An approval token from the not-admitted page must not become a code: the rules are checked again.
    const refused = await refuseUnadmitted(request, reply, checked, params, session);
    if (refused) return refused;
    // The session may have changed since the page was shown: decide again, but the approval now counts.
    const decision = decideAuthorization({
      request: { ...authz, prompt: [] },
      session: { identityId: session.identityId, assurance: session.assurance, authTime: session.authTime },
      now: app.kp.now(),
      approval: mergeApproval(null, authz),
    });
    if (decision.action !== 'issue')
      throw fail('access_denied', 'The sign-in changed while this page was open. Go back to the app and start again.');
    return issueCode(request, reply, client, authz, 'new');
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
    async (request, reply) => handle(request, reply, request.query as RawParams),
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
      const body = (request.body ?? {}) as RawParams;
      if (body.approval !== undefined) return approve(request, reply, body);
      return handle(request, reply, body);
    },
  );
}
