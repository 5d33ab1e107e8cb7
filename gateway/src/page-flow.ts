import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAssuranceLevel, meetsAssurance } from '#lib/assurance/assurance.js';
import { isDependencyUnavailable, unavailableFailure } from '#lib/errors/dependency-outage.js';
import { fail, isKeyplaneError, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import {
  clearCookie,
  cookieName,
  clearSessionCookies,
  loginCookieName,
  readLoginCookie,
  readSessionCookies,
  REFUSED_COOKIE,
  refusedCookie,
  SIGNED_OUT_COOKIE,
  signedOutCookie,
  writeLoginCookie,
  writeSessionCookies,
  type GateSession,
  type LoginState,
} from '#lib/gateway-protocol/session-cookie.js';
import { NO_ROUTE_ADMITS, NOT_ADMITTED } from '#lib/access/evaluate-access.js';
import { originRefusal } from '#lib/http/check-request-origin.js';
import { computeS256Challenge } from '#lib/pkce/check-pkce.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import { escapeHtml } from '#lib/html/escape-html.js';
import { randomToken } from '#lib/crypto/random.js';
import { validateReturnUrl } from '#lib/http/return-url.js';
import type { Refusal } from './authorize.js';
import type { GatewayContext } from './context.js';
import { verifyIdToken } from './id-token.js';
import { countRefusal, redirect, sendError } from './respond.js';
import { requestScope } from './request-scope.js';
import { chosenLocale, gatewayUi, languageSwitcher } from './locale.js';
import { endGatewaySession } from './sessions.js';
import { readBodyUpTo } from './request-body.js';
import { deniedPage, pageStart, PAGE_HEADERS, PAGE_STYLE_HASH, signedOutPage } from './pages.js';
import { isTokenEndpointError } from './token-client.js';

/** What the gateway asks for (docs/gateway.md#browser-sessions); the control plane grants only what the client registered. */
export const GATEWAY_SCOPE = 'openid email profile orgs groups offline_access';

/** How long a login (state, nonce, PKCE verifier) may take, in seconds. */
const LOGIN_SECONDS = 600;

/**
 * The authorization request (code, PKCE S256, state, nonce) and the per-login cookie that
 * remembers it, so parallel tabs never clash. A step-up (`acr`) asks for the level and a fresh
 * authentication (RFC 9470 §4) and keeps the current session until it succeeds; a plain
 * sign-in starts from no session (session fixation, GHSA-f24x-5g9q-753f).
 */
async function startSignIn(
  ctx: GatewayContext,
  req: IncomingMessage,
  returnTo: string,
  acr?: string,
  prompt?: 'select_account',
): Promise<{ location: string; cookies: string[] }> {
  const { cookieHeader, cookies: presented } = requestScope(req);
  // The session the browser has now, ended once this sign-in succeeds (docs/gateway.md#session-rotation).
  const current = cookieHeader
    ? await readSessionCookies(presented, {
        keys: ctx.cookieKeys,
        now: ctx.now(),
        secure: ctx.secure,
      })
    : null;
  const login: LoginState = {
    state: randomToken(16),
    nonce: randomToken(16),
    codeVerifier: randomToken(32),
    returnTo,
    ...(acr ? { acrValues: acr } : {}),
    ...(current?.exp !== undefined ? { replaces: { sid: current.sid, exp: current.exp } } : {}),
  };
  const cookies = [
    await writeLoginCookie(login, {
      keys: ctx.cookieKeys,
      now: ctx.now(),
      secure: ctx.secure,
      ttlSeconds: LOGIN_SECONDS,
    }),
  ];
  if (!acr) cookies.push(...clearSessionCookies(Object.keys(presented), ctx.secure));
  // A new sign-in (another account, or the same one admitted since) ends the refusal's 403 pages.
  const refusedMarker = cookieName(REFUSED_COOKIE, ctx.secure);
  if (presented[refusedMarker] !== undefined) cookies.push(clearCookie(refusedMarker, ctx.secure));
  const params = new URLSearchParams({
    // offline_access: a refresh token, so the session can follow the control plane (register the scope and the refresh_token grant).
    // profile names the account on the gateway's pages, orgs and groups go on to the upstream; a scope the
    // client did not register is simply not granted.
    response_type: 'code',
    client_id: ctx.config.clientId!,
    redirect_uri: ctx.redirectUri,
    scope: GATEWAY_SCOPE,
    state: login.state,
    nonce: login.nonce,
    code_challenge: computeS256Challenge(login.codeVerifier),
    code_challenge_method: 'S256',
  });
  if (acr) {
    params.set('acr_values', acr);
    params.set('max_age', '0');
  }
  // "Use another account" on the access-denied page: the control plane asks which account.
  if (prompt) params.set('prompt', prompt);
  // A language chosen with the gateway's switcher goes on to the control plane's pages (OIDC Core
  // §3.1.2.1); without one the control plane negotiates itself, with the account's preference.
  const locale = chosenLocale(ctx, req);
  if (locale) params.set('ui_locales', locale);
  return { location: `${ctx.controlPlane}/auth/authorize?${params}`, cookies };
}

/** Sends the refusal: a browser straight to the control plane's authorize (docs/gateway.md#refusals), anyone else the envelope. */
export async function refuse(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  refused: Refusal,
): Promise<void> {
  if (refused.signIn === undefined && refused.denied) {
    countRefusal(ctx.metrics, refused.error.reason);
    return deniedPage(ctx, req, res, refused.denied);
  }
  if (refused.signIn === undefined) return sendError(ctx.metrics, res, refused.error);
  if (!ctx.config.clientId)
    return sendError(ctx.metrics, res, fail('not_ready', 'the gateway has no client id at the control plane'));
  // The request's own path, but held to the same rule as `rd`: `//host/…` must never become a Location.
  const returnTo = validateReturnUrl(refused.signIn.returnTo, ctx.publicUrl) ?? '/';
  const { cookies: presented } = requestScope(req);
  // The control plane refused this browser's account a moment ago: sending it back would be refused again.
  if (refused.signIn.acr === undefined && presented[cookieName(REFUSED_COOKIE, ctx.secure)] !== undefined) {
    countRefusal(ctx.metrics, 'access_denied');
    return deniedPage(ctx, req, res, { returnTo });
  }
  countRefusal(ctx.metrics, refused.reason);
  // Back from a sign-out (the control plane returns to the gateway's root): say so, once, instead
  // of sending the person straight into a new sign-in they did not ask for.
  if (refused.signIn.acr === undefined && presented[cookieName(SIGNED_OUT_COOKIE, ctx.secure)] !== undefined)
    return signedOutPage(ctx, req, res, returnTo);
  const { location, cookies } = await startSignIn(ctx, req, returnTo, refused.signIn.acr);
  return redirect(res, location, cookies);
}

/** `/_gate/signin?rd=…&acr_values=…`: starts a sign-in (or a step-up) and comes back to `rd`. */
export async function signin(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  if (!ctx.config.clientId)
    return sendError(ctx.metrics, res, fail('not_ready', 'the gateway has no client id at the control plane'));
  const returnTo = validateReturnUrl(query.get('rd') ?? '/', ctx.publicUrl);
  if (!returnTo)
    return sendError(ctx.metrics, res, fail('invalid_return', 'the return URL must be a path on this gateway'));
  const acr = query.get('acr_values') ?? undefined;
  if (acr !== undefined && !isAssuranceLevel(acr))
    return sendError(ctx.metrics, res, fail('invalid_request', 'acr_values must be an assurance level'));
  const prompt = query.get('prompt') ?? undefined;
  if (prompt !== undefined && prompt !== 'select_account')
    return sendError(ctx.metrics, res, fail('invalid_request', 'prompt may only be select_account'));
  const { location, cookies } = await startSignIn(ctx, req, returnTo, acr, prompt);
  redirect(res, location, cookies);
}

/**
 * `/_gate/callback` (RFC 6749 §4.1.2, OIDC Core §3.1.2.5): the login cookie of this `state`
 * (one use: cleared in every answer), RFC 9207 `iss`, the code exchanged with the PKCE verifier,
 * the ID token verified (nonce of this login), the requested assurance met, then a new
 * session replaces any old one (session fixation) and the browser returns to where it was.
 * Every refusal is an envelope, never a redirect back into sign-in, so nothing loops.
 */
export async function callback(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const { config, tokens, secure } = ctx;
  if (!config.clientId || !tokens)
    return sendError(
      ctx.metrics,
      res,
      fail('not_ready', 'the gateway has no client credentials for the control plane'),
    );
  const { cookies } = requestScope(req);
  const stateParam = query.get('state') ?? '';
  const login = stateParam
    ? await readLoginCookie(cookies, stateParam, { keys: ctx.cookieKeys, now: ctx.now(), secure })
    : null;
  const cleared = login ? [clearCookie(loginCookieName(login.state, secure), secure)] : [];
  const refuseWith = (error: KeyplaneError) =>
    sendError(ctx.metrics, res, error, cleared.length > 0 ? { 'set-cookie': cleared } : {});
  if (!login)
    return refuseWith(
      fail('sign_in_expired', 'this sign-in is unknown, expired or finished already; start again from the app'),
    );
  // RFC 9207 §2.4: a response naming another issuer belongs to another authorization server (mix-up).
  const iss = query.get('iss');
  if (iss !== null && iss !== ctx.controlPlane)
    return refuseWith(fail('issuer_mismatch', 'the sign-in response comes from another issuer'));
  const error = query.get('error');
  const description = query.get('error_description');
  // The account is not admitted (never "the person declined"): back where the browser was, which
  // now answers the 403 page for a while instead of a sign-in that would be refused again.
  if (error === 'access_denied' && (description === NO_ROUTE_ADMITS || description === NOT_ADMITTED))
    return redirect(res, `${ctx.publicUrl}${login.returnTo}`, [...cleared, refusedCookie(ctx.secure)]);
  if (error !== null) {
    const code = /^[a-z_]{1,64}$/.test(error) ? error : 'invalid_request';
    return refuseWith(
      fail(
        'sign_in_refused',
        code === 'access_denied' ? 'the sign-in was declined' : `the control plane refused the sign-in (${code})`,
        { fields: { error: code } },
      ),
    );
  }
  const code = query.get('code');
  if (!code) return refuseWith(fail('invalid_request', 'the callback carries no code'));
  let set;
  try {
    set = await tokens.exchangeCode({ code, codeVerifier: login.codeVerifier, redirectUri: ctx.redirectUri });
  } catch (failure) {
    if (!isTokenEndpointError(failure)) throw failure;
    if (failure.kind === 'unavailable') return refuseWith(unavailableFailure({ dependency: 'control_plane' }));
    if (failure.error === 'invalid_grant')
      return refuseWith(fail('invalid_grant', 'the sign-in code is spent or expired; start again from the app'));
    return refuseWith(
      fail('sign_in_refused', `the control plane refused the code exchange (${failure.error ?? 'error'})`, {
        fields: { error: failure.error ?? 'invalid_request' },
      }),
    );
  }
  if (!set.idToken) return refuseWith(fail('invalid_id_token', 'the control plane sent no ID token'));
  const at = ctx.now();
  let facts;
  try {
    facts = await verifyIdToken(set.idToken, {
      issuer: ctx.controlPlane,
      clientId: config.clientId,
      keys: ctx.keys,
      now: at,
      nonce: login.nonce,
    });
  } catch (failure) {
    // The control plane's key set could not be fetched: the code is spent, so the browser starts again.
    if (isDependencyUnavailable(failure)) return refuseWith(unavailableFailure(failure));
    if (!isKeyplaneError(failure)) throw failure;
    return refuseWith(failure);
  }
  // The level asked for with acr_values must be what the control plane proved; asking again would loop.
  if (login.acrValues && (!isAssuranceLevel(login.acrValues) || !meetsAssurance(facts.assurance, login.acrValues))) {
    return refuseWith(
      fail(
        'insufficient_assurance',
        `this needs assurance ${login.acrValues}; the sign-in reached ${facts.assurance}`,
        { fields: { acr_values: login.acrValues } },
      ),
    );
  }
  const session: GateSession = {
    sid: randomToken(16),
    sub: facts.sub,
    principalType: facts.principalType,
    assurance: facts.assurance,
    ...(facts.email !== undefined ? { email: facts.email, emailVerified: facts.emailVerified === true } : {}),
    ...(facts.username !== undefined ? { username: facts.username } : {}),
    ...(facts.orgs !== undefined ? { orgs: facts.orgs } : {}),
    ...(facts.groups !== undefined ? { groups: facts.groups } : {}),
    ...(facts.idp !== undefined ? { idp: facts.idp } : {}),
    scopes: set.scope,
    ...(facts.authTime !== undefined ? { authTime: facts.authTime } : {}),
    ...(facts.sid !== undefined ? { idpSid: facts.sid } : {}),
    accessToken: set.accessToken,
    accessTokenExpiresAt: Math.floor(at / 1000) + set.expiresIn,
    ...(set.refreshToken ? { refreshToken: set.refreshToken } : {}),
    idToken: set.idToken,
  };
  await endReplacedSessions(ctx, login, cookies, at);
  // A new sid and every old session cookie (chunks too) replaced: nothing from before the sign-in survives it.
  const written = await writeSessionCookies(session, {
    keys: ctx.cookieKeys,
    now: at,
    secure,
    ttlSeconds: config.sessionLifetime,
    present: Object.keys(cookies),
  });
  ctx.log.info(
    { event: 'gateway.signed_in', assurance: session.assurance, principalType: session.principalType },
    'signed in',
  );
  redirect(res, `${ctx.publicUrl}${login.returnTo}`, [...cleared, ...written]);
}

/**
 * Session rotation at an authentication (docs/gateway.md#session-rotation; OWASP ASVS 5.0
 * V7.2.4): the session this sign-in or step-up replaces ends, both the one the browser presents
 * now (a step-up keeps it until here) and the one its `/_gate/signin` cleared, so a copy of the
 * old cookie is refused at every replica instead of living on beside the new one, and never
 * moves on to it. The old cookie's refresh token is revoked at the control plane (RFC 7009), as
 * at sign-out. The control-plane session itself goes on (renewed there under a new token,
 * same `sid`): this ends only the gateway's cookie.
 */
async function endReplacedSessions(
  ctx: GatewayContext,
  login: LoginState,
  cookies: Readonly<Record<string, string>>,
  at: number,
): Promise<void> {
  const presented = await readSessionCookies(cookies, { keys: ctx.cookieKeys, now: at, secure: ctx.secure });
  const ended = new Map<string, number>();
  const replaces = login.replaces;
  if (replaces && typeof replaces.sid === 'string' && typeof replaces.exp === 'number')
    ended.set(replaces.sid, replaces.exp * 1000);
  if (presented?.exp !== undefined) ended.set(presented.sid, presented.exp * 1000);
  for (const [sid, until] of ended) await endGatewaySession(ctx, sid, until);
  if (presented?.refreshToken && ctx.tokens?.revoke && !(await ctx.tokens.revoke(presented.refreshToken)))
    ctx.log.warn(
      { event: 'gateway.revoke_failed' },
      "the control plane did not confirm the replaced session's refresh token revocation",
    );
}

/** The sign-out form's CSRF token: bound to the session (HMAC with the newest cookie key), so another site cannot know it. */
function signoutToken(ctx: GatewayContext, session: GateSession): string {
  return createHmac('sha256', ctx.cookieKeys[0]!.key)
    .update(`keyplane:gateway:signout:${session.sid}`)
    .digest('base64url');
}

/** Reads a small urlencoded form body (the sign-out form); null when it is too large or not a form. */
async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) return new URLSearchParams();
  const body = await readBodyUpTo(req, SIGNOUT_FORM_LIMIT);
  return body === null ? null : new URLSearchParams(body.toString('utf8'));
}

const SIGNOUT_FORM_LIMIT = 4096;

/** GET: the confirmation page, a plain POST form (no script), so a link or an image on another site signs nobody out. */
function signoutPage(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  session: GateSession,
  returnTo: string,
): void {
  const ui = gatewayUi(ctx, req);
  const here = `/_gate/signout?${new URLSearchParams({ rd: returnTo })}`;
  const html = `${pageStart(ui, escapeHtml(ui.t('gateway.signout.title')))}
<body><main><h1>${escapeHtml(ui.t('gateway.signout.heading'))}</h1><p>${escapeHtml(ui.t('gateway.signout.body'))}</p>
<form method="post" action="/_gate/signout" data-action="signout-form"><input type="hidden" name="csrf" value="${escapeHtml(signoutToken(ctx, session))}"><input type="hidden" name="rd" value="${escapeHtml(returnTo)}">
<button type="submit" data-action="signout">${escapeHtml(ui.t('gateway.signout.button'))}</button><a href="${escapeHtml(returnTo)}">${escapeHtml(ui.t('gateway.signout.stay'))}</a></form></main>
${languageSwitcher(ui, here)}</body></html>`;
  res.writeHead(200, {
    ...PAGE_HEADERS,
    'content-language': ui.locale,
    // The form posts here and is redirected to the control plane's logout: form-action covers both (CSP 3 follows redirects).
    'content-security-policy': `default-src 'none'; style-src ${PAGE_STYLE_HASH}; form-action 'self' ${new URL(ctx.controlPlane).origin}; frame-ancestors 'none'; base-uri 'none'`,
  });
  res.end(html);
}

/**
 * `/_gate/signout`. GET shows a confirmation form; only a POST carrying the session's CSRF token
 * ends anything: the session cookies are cleared, its newest state forgotten, its refresh token
 * revoked at the control plane (RFC 7009, so a copied cookie cannot be refreshed), and the
 * browser goes on to RP-initiated logout. Without a session there is nothing to protect: the
 * cookies are cleared and the browser returns to `rd`.
 */
export async function signout(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  const { cookies } = requestScope(req);
  const session = await readSessionCookies(cookies, { keys: ctx.cookieKeys, now: ctx.now(), secure: ctx.secure });
  const cleared = clearSessionCookies(Object.keys(cookies), ctx.secure);
  const form = req.method === 'POST' ? await readForm(req) : new URLSearchParams();
  if (form === null)
    return sendError(ctx.metrics, res, fail('payload_too_large', 'the sign-out form is too large'), {
      connection: 'close',
    });
  const returnTo = validateReturnUrl(form.get('rd') ?? query.get('rd') ?? '/', ctx.publicUrl) ?? '/';
  // Without a session (it ended elsewhere meanwhile) the person is signed out already: say so too.
  if (!session) return redirect(res, `${ctx.publicUrl}${returnTo}`, [...cleared, signedOutCookie(ctx.secure)]);
  if (req.method !== 'POST') return signoutPage(ctx, req, res, session, returnTo);
  // The session's CSRF token is the check; Fetch Metadata (then Origin) refuses another site's
  // post before it is even compared (docs/security.md#csrf-on-forms).
  if (!fromOwnPage(req, ctx.publicUrl) || !constantEquals(form.get('csrf') ?? '', signoutToken(ctx, session))) {
    return sendError(ctx.metrics, res, fail('origin_mismatch', "sign out from the gateway's own sign-out page"));
  }
  // A copy of this cookie (or an older one) is refused at once at every replica: it must not move
  // on to the newest state of this session, nor refresh (docs/gateway.md#session-rotation).
  await endGatewaySession(ctx, session.sid, (session.exp ?? 0) * 1000);
  cleared.push(signedOutCookie(ctx.secure));
  if (session.refreshToken && ctx.tokens?.revoke) {
    const revoked = await ctx.tokens.revoke(session.refreshToken);
    if (!revoked)
      ctx.log.warn(
        { event: 'gateway.revoke_failed' },
        'the control plane did not confirm the refresh token revocation',
      );
  }
  if (!ctx.config.clientId) return redirect(res, `${ctx.publicUrl}${returnTo}`, cleared);
  // RP-initiated logout at the control plane, which comes back to this gateway's root.
  const params = new URLSearchParams({ client_id: ctx.config.clientId, post_logout_redirect_uri: `${ctx.publicUrl}/` });
  if (session.idToken) params.set('id_token_hint', session.idToken);
  return redirect(res, `${ctx.controlPlane}/auth/logout?${params}`, cleared);
}

/** The CSRF rule of every form (lib/http/check-request-origin.ts) for a post to the gateway. */
function fromOwnPage(req: IncomingMessage, publicUrl: string): boolean {
  const site = req.headers['sec-fetch-site'];
  const headers = { secFetchSite: typeof site === 'string' ? site : undefined, origin: req.headers.origin };
  return originRefusal(headers, { expectedOrigin: new URL(publicUrl).origin, originRequired: false }) === null;
}
