import type { IncomingMessage, ServerResponse } from 'node:http';
import { isDependencyUnavailable, unavailableFailure } from '#lib/errors/dependency-outage.js';
import { fail, isKeyplaneError, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import type { Reason } from '#lib/errors/reasons.js';
import { evaluatePolicy, findRoute, type Decision } from '#lib/gateway-protocol/policy.js';
import type { RequestTarget } from '#lib/gateway-protocol/request-path.js';
import { identifyApiCaller, isApiCaller } from './api-callers.js';
import { challenge } from './bearer.js';
import type { GatewayContext, Identified } from './context.js';
import { withResourceMetadata } from './mcp.js';
import { identifySession } from './identify-session.js';

/** A browser is sent to sign in (or step up) at the control plane; anyone else gets an envelope. */
export type Refusal =
  | { signIn: { returnTo: string; acr?: string }; reason: Reason }
  | { signIn?: undefined; error: KeyplaneError; denied?: DeniedPage };

/** A browser refused by the access rules sees who it is signed in as and where (docs/gateway.md#access-rules). */
export interface DeniedPage {
  account: string;
  /** The refused path and query: where "use another account" comes back to. */
  returnTo: string;
}

export type Authorized = { who: Identified; decision: Decision } | { refused: Refusal };

export interface AuthorizeOptions {
  method: string;
  target: RequestTarget;
  /** `/_gate/auth`: the request is the proxy's, the target the one it reports. */
  forwardAuth?: boolean;
  /** Forward auth only: the proxy relays a redirect to the browser (`?redirect=1`). */
  wantsRedirect?: boolean;
  /** Where a refreshed session's cookies go; absent on upgrades. */
  res?: ServerResponse;
}

function isBrowserNavigation(req: IncomingMessage, method: string): boolean {
  return (method === 'GET' || method === 'HEAD') && /text\/html/i.test(req.headers['accept'] ?? '');
}

/** The envelope (or redirect) for a refused decision. */
function refusalFor(
  ctx: GatewayContext,
  decision: Extract<Decision, { outcome: 'refuse' }>,
  who: Identified,
  browser: boolean,
  returnTo: string,
  isHtmlRequest: boolean,
): Refusal {
  const { publicUrl } = ctx;
  const scheme = who.caller?.kind === 'dpop' ? 'DPoP' : 'Bearer';
  const api = who.api || !browser;
  switch (decision.reason) {
    case 'unauthorized':
      if (!api) return { signIn: { returnTo }, reason: 'unauthorized' };
      return {
        error: fail('unauthorized', 'sign in or present an access token', {
          headers: { 'www-authenticate': `${challenge('Bearer', publicUrl)}, ${challenge('DPoP', publicUrl)}` },
        }),
      };
    case 'insufficient_user_authentication': {
      const acr = decision.requiredAssurance ?? 'sensitive';
      if (!api) return { signIn: { returnTo, acr }, reason: 'insufficient_user_authentication' };
      if (!who.api)
        return {
          error: fail('insufficient_assurance', `this route needs assurance ${acr}`, { fields: { acr_values: acr } }),
        };
      const description = `this route needs assurance ${acr}`;
      return {
        error: fail('insufficient_user_authentication', description, {
          headers: {
            'www-authenticate': challenge(scheme, publicUrl, {
              error: 'insufficient_user_authentication',
              error_description: description,
              acr_values: acr,
            }),
          },
          fields: { error: 'insufficient_user_authentication', acr_values: acr },
        }),
      };
    }
    case 'insufficient_scope': {
      const scope = (decision.missingScopes ?? []).join(' ');
      return {
        error: fail('insufficient_scope', `this route needs scope ${scope}`, {
          headers: { 'www-authenticate': challenge(scheme, publicUrl, { error: 'insufficient_scope', scope }) },
          fields: { error: 'insufficient_scope', scope },
        }),
      };
    }
    case 'dpop_required':
      return {
        error: fail('dpop_required', 'this route needs a DPoP-bound token and proof', {
          headers: {
            'www-authenticate': challenge('DPoP', publicUrl, {
              error: 'invalid_token',
              error_description: 'DPoP required',
            }),
          },
        }),
      };
    case 'access_denied': {
      const error = fail('access_denied', 'this account may not use this app; ask its operator for access');
      // Never a redirect to sign-in: the same account would be refused again (a loop). A browser
      // gets a page that offers another account instead.
      if (who.api || !isHtmlRequest) return { error };
      return { error, denied: { account: accountName(ctx, who), returnTo } };
    }
    case 'principal_not_allowed':
      return {
        error: fail(
          'principal_not_allowed',
          `this route does not admit ${who.caller?.principalType ?? 'this'} principals`,
        ),
      };
  }
}

/** How the refused account is named: its username (ID token or directory), else its address, else its id. */
function accountName(ctx: GatewayContext, who: Identified): string {
  const subject = who.caller?.subject ?? '';
  return (
    who.session?.username ??
    ctx.holder.current?.directory?.identities[subject]?.username ??
    who.session?.email ??
    subject
  );
}

/** Runs identification and policy: who may pass, or the refusal to answer (an envelope or a redirect). */
export async function authorize(
  ctx: GatewayContext,
  req: IncomingMessage,
  options: AuthorizeOptions,
): Promise<Authorized> {
  const { method, target } = options;
  const held = ctx.holder.current;
  if (!held) return { refused: { error: fail('gateway_not_configured', 'the gateway has no signed config yet') } };
  // An MCP route takes tokens only (docs/gateway.md#mcp-routes): a session cookie is no credential
  // there, and a refusal is never a redirect to sign in.
  const mcpRoute = findRoute(held.policy.routes, target.path);
  const mcp = mcpRoute?.mcp === true ? mcpRoute : null;
  let who: Identified;
  try {
    who = isApiCaller(req)
      ? await identifyApiCaller(ctx, req, method, target.path)
      : mcp
        ? { caller: null, session: null, api: true }
        : await identifySession(ctx, req, options.res);
  } catch (caught) {
    // Redis or the control plane could not be reached: 503 `unavailable`, refused or observed like any failure.
    const error = isDependencyUnavailable(caught) ? unavailableFailure(caught) : caught;
    if (!isKeyplaneError(error)) throw error;
    if (held.policy.mode === 'enforce')
      return { refused: { error: mcp ? withResourceMetadata(ctx, mcp, error) : error } };
    // observe / canary: a credential that does not verify cannot be placed in a canary bucket,
    // so it is observed: counted under its reason and passed on without identity.
    ctx.metrics.observed.inc({ reason: error.reason });
    ctx.log.info(
      { event: 'gateway.observed', reason: error.reason, path: target.path, mode: held.policy.mode },
      'would refuse',
    );
    return {
      who: { caller: null, session: null, api: true },
      decision: { outcome: 'allow', route: null, enforced: false, wouldRefuse: 'unauthorized' },
    };
  }
  const decision = evaluatePolicy(held.policy, target.path, who.caller, held.directory);
  if (decision.outcome === 'refuse' || decision.enforced) ctx.enforcement.lastAt = ctx.now();
  if (decision.outcome === 'allow') {
    if (decision.wouldRefuse) {
      ctx.metrics.observed.inc({ reason: decision.wouldRefuse });
      ctx.log.info(
        { event: 'gateway.observed', reason: decision.wouldRefuse, path: target.path, mode: held.policy.mode },
        'would refuse',
      );
    }
    return { who, decision };
  }
  // Only a page load is ever redirected, never an API caller or a fetch; in forward auth only
  // when the proxy relays the answer to the browser (`?redirect=1`: Traefik, Caddy).
  const browser =
    !who.api && isBrowserNavigation(req, method) && (!options.forwardAuth || options.wantsRedirect === true);
  const refused = refusalFor(
    ctx,
    decision,
    who,
    browser,
    `${target.path}${target.search}`,
    isBrowserNavigation(req, method),
  );
  if (mcp && refused.signIn === undefined) {
    // An MCP client reads the envelope's challenge, never a page.
    const { denied: _page, ...answer } = refused;
    return { refused: { ...answer, error: withResourceMetadata(ctx, mcp, refused.error) } };
  }
  return { refused };
}
