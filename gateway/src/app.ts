import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { JWTVerifyGetKey } from 'jose';
import { pino, type Logger } from 'pino';
import type { GatewayConfig } from '../../config/types.js';
import { isAssuranceLevel, meetsAssurance, rankAssurance } from '../../lib/assurance/assurance.js';
import { fail, isKeyplaneError, type KeyplaneError } from '../../lib/errors/keyplane-error.js';
import type { Reason } from '../../lib/errors/reasons.js';
import { buildUpstreamAssertion } from '../../lib/gateway/assertion.js';
import { buildGatewayEvidence } from '../../lib/gateway/evidence.js';
import { applyForwardedHeaders, type ClientView } from '../../lib/gateway/forwarded.js';
import { buildIdentityHeaders, stripIdentityHeaders } from '../../lib/gateway/identity-headers.js';
import { evaluatePolicy, findRoute, type Caller, type Decision } from '../../lib/gateway/policy.js';
import { normalizeRequestTarget, type RequestTarget } from '../../lib/gateway/request-path.js';
import { validateReturnUrl } from '../../lib/util/return-url.js';
import {
  clearCookie, clearSessionCookies, loginCookieName, parseCookieHeader, readLoginCookie, readSessionCookies,
  writeLoginCookie, writeSessionCookies, type CookieKey, type GateSession,
} from '../../lib/gateway/session-cookie.js';
import { forgetSingleFlight, runSingleFlight } from '../../lib/gateway/single-flight.js';
import { GatewayConfigHolder, type ConfigStore } from '../../lib/gateway/signed-config.js';
import { computeS256Challenge } from '../../lib/pkce/check-pkce.js';
import { MemorySharedState, type SharedState } from '../../lib/runtime/shared-state/index.js';
import { compileAddressList } from '../../lib/util/cidr.js';
import { ExpiringCache } from '../../lib/util/expiring-cache.js';
import { randomToken } from '../../lib/util/random.js';
import { DpopKeyCache } from '../../lib/dpop/key-cache.js';
import { authenticateApiCaller, challenge, deriveDpopNonceKeys, remoteControlPlaneKeys } from './bearer.js';
import { fileConfigStore } from './config-store.js';
import { verifyIdToken } from './id-token.js';
import { loadCookieKeys, loadOrCreateSigningKey, type GatewaySigningKey } from './keys.js';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.js';
import { UpstreamProxy, dropHopByHop, hasBody } from './proxy.js';
import { createTokenClient, isTokenEndpointError, type TokenClient } from './token-client.js';

/** A gateway config whose public URL is known (startGateway fills it in after binding). */
export type ResolvedGatewayConfig = GatewayConfig & { publicUrl: string };

export interface GatewayDeps {
  now?: () => number;
  /** Shared state for the DPoP replay cache; in-process when absent. */
  state?: SharedState;
  /** The control plane's signing keys; jose's remote JWKS of the control plane when absent. */
  controlPlaneKeys?: JWTVerifyGetKey;
  configStore?: ConfigStore;
  logStream?: NodeJS.WritableStream;
  /** The control plane's token endpoint; an undici client built from `clientId` + `clientSecret` when absent. */
  tokenClient?: TokenClient;
}

export interface Gateway {
  publicUrl: string;
  config: ResolvedGatewayConfig;
  configHolder: GatewayConfigHolder;
  metrics: GatewayMetrics;
  signingKey: GatewaySigningKey;
  cookieKeys: readonly CookieKey[];
  state: SharedState;
  log: Logger;
  /** A signed evidence report of what this gateway holds and did (pushed to the control plane by `startGateway`). */
  evidence(ttlSeconds?: number): Promise<string>;
  handleRequest(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Stops the upstream pool (in-flight requests finish first unless `force`). */
  close(force?: boolean): Promise<void>;
}

/** How long a login (state, nonce, PKCE verifier) may take, in seconds. */
const LOGIN_SECONDS = 600;
const OWN_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
const ASSERTION_CACHE_LIMIT = 10_000;
const SESSION_CACHE_LIMIT = 10_000;
const SESSION_CACHE_MS = 60_000;
/** Verified access tokens and imported DPoP proof keys (each saves an ES256 verification or a key import per request). */
const TOKEN_CACHE_LIMIT = 10_000;
/** A session's access token is refreshed this many seconds before it expires (clock skew, requests in flight). */
const REFRESH_SKEW_SECONDS = 30;
/**
 * Single-flight settings of a refresh: the lock outlives the token request's own timeout; waiters
 * give up (503, retry) after 10 s; the result stays readable for 60 s, so a request still carrying
 * the old cookie gets the new one instead of spending the rotated refresh token again, which
 * the control plane would answer by revoking the whole family (RFC 9700 §4.14.2).
 */
const REFRESH_FLIGHT = { lockMs: 15_000, waitMs: 10_000, resultMs: 60_000 } as const;
/** Where the newest sealed state of a session is kept (shared state), until the session ends. */
const latestSessionKey = (sid: string) => `session:latest:${sid}`;
/** Stored for the waiters when the control plane did not answer: they retry rather than sign out. */
const REFRESH_RETRY = '{"retry":true}';

/** A browser is sent to sign in (or step up) at the control plane; anyone else gets an envelope. */
type Refusal = { signIn: { returnTo: string; acr?: string }; reason: Reason } | { signIn?: undefined; error: KeyplaneError };

interface Identified {
  caller: Caller | null;
  session: GateSession | null;
  /** The caller sent Bearer or DPoP: never redirected. */
  api: boolean;
}

/** What a due refresh produced: the refreshed session, or none (signed out), with the Set-Cookie values to answer with. */
interface RefreshOutcome {
  session: GateSession | null;
  cookies: string[];
}

/** Builds the edge-gate: request and upgrade handlers over one upstream, with the policy from the signed config. */
export async function buildGateway(config: ResolvedGatewayConfig, deps: GatewayDeps = {}): Promise<Gateway> {
  const now = deps.now ?? Date.now;
  const publicUrl = config.publicUrl.replace(/\/$/, '');
  const secure = publicUrl.startsWith('https://');
  const log = pino({ level: config.logLevel, base: { service: 'gateway' } }, deps.logStream ?? process.stderr);
  let heldVersion = (): number => 0;
  const metrics = createGatewayMetrics(() => heldVersion());
  const state = deps.state ?? new MemorySharedState();
  const ownsState = !deps.state;
  const signingKey = await loadOrCreateSigningKey(config.dataDir);
  const cookieKeys = loadCookieKeys(config.cookieKeys, config.dataDir);
  const dpopNonceKeys = config.dpopNonce ? deriveDpopNonceKeys(cookieKeys) : undefined;
  const trustedList = compileAddressList(config.trustedProxies);
  // One look-up per connection, not per request: a keep-alive socket keeps its peer.
  const trustBySocket = new WeakMap<object, boolean>();
  const trustOf = (req: IncomingMessage): ((address: string) => boolean) => (address) => {
    let trusted = trustBySocket.get(req.socket);
    if (trusted === undefined) {
      trusted = trustedList(address);
      trustBySocket.set(req.socket, trusted);
    }
    return trusted;
  };
  /** Forwarded headers kept only from a trusted peer (STYLE 12), and what they say about the client. */
  const applyForwarded = (req: IncomingMessage): ClientView =>
    applyForwardedHeaders(req.headers, { remoteAddress: req.socket.remoteAddress ?? '', encrypted: Boolean((req.socket as TLSSocket).encrypted) }, trustOf(req));
  const controlPlane = config.controlPlane.replace(/\/$/, '');
  const keys = deps.controlPlaneKeys ?? remoteControlPlaneKeys(controlPlane);
  // The code exchange and refreshes need the client's secret (client_secret_basic).
  const tokens = deps.tokenClient ?? (config.clientId && config.clientSecret
    ? createTokenClient({ controlPlane, clientId: config.clientId, clientSecret: config.clientSecret })
    : undefined);
  const redirectUri = `${publicUrl}/_gate/callback`;
  const configHolder = new GatewayConfigHolder({ issuer: controlPlane, clientId: config.clientId ?? '', store: deps.configStore ?? fileConfigStore(config.dataDir) });
  heldVersion = () => configHolder.current?.version ?? 0;
  const upstreams = routeUpstreams(config, (origin) => new UpstreamProxy({
    upstream: origin,
    connections: config.upstreamConnections,
    headersTimeoutMs: config.upstreamTimeout * 1000,
    onHeaders: (ms) => metrics.upstreamSeconds.observe(ms / 1000),
  }));
  const assertions = new ExpiringCache<string, string>(ASSERTION_CACHE_LIMIT);
  const startedAt = now();
  // Tells this process's evidence apart from other replicas' and from its own after a restart.
  const instance = randomToken(12);
  let lastEnforcementAt: number | null = null;
  const sessions = new ExpiringCache<string, GateSession>(SESSION_CACHE_LIMIT);
  const verifiedTokens = new ExpiringCache<string, Record<string, unknown>>(TOKEN_CACHE_LIMIT);
  const dpopKeys = new DpopKeyCache(TOKEN_CACHE_LIMIT);

  // ---------- responses ----------
  function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
    res.end(JSON.stringify(body));
  }

  function countRefusal(reason: Reason): void {
    metrics.refusals.inc({ reason });
    metrics.requests.inc({ outcome: 'refused' });
  }

  /** A request let through: `observed` when the policy would have refused it (observe, canary). */
  function countPassed(decision: Decision): void {
    metrics.requests.inc({ outcome: decision.outcome === 'allow' && decision.wouldRefuse ? 'observed' : 'allowed' });
  }

  function sendError(res: ServerResponse, error: KeyplaneError, extraHeaders: Record<string, string | string[]> = {}): void {
    countRefusal(error.reason);
    sendJson(res, error.status, error.toEnvelope(), { ...error.headers, ...extraHeaders });
  }

  function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
    // Cookies set earlier on this response (a refresh that ended the session) go out too.
    const earlier = res.getHeader('set-cookie');
    const all = [...[earlier ?? []].flat().map(String), ...cookies];
    res.writeHead(302, { location, 'cache-control': 'no-store', ...(all.length > 0 ? { 'set-cookie': all } : {}) });
    res.end();
  }

  /**
   * The authorization request (code, PKCE S256, state, nonce) and the per-login cookie that
   * remembers it, so parallel tabs never clash. A step-up (`acr`) asks for the level and a fresh
   * authentication (RFC 9470 §4) and keeps the current session until it succeeds; a plain
   * sign-in starts from no session (session fixation, GHSA-f24x-5g9q-753f).
   */
  async function startSignIn(cookieHeader: string | undefined, returnTo: string, acr?: string): Promise<{ location: string; cookies: string[] }> {
    const login = { state: randomToken(16), nonce: randomToken(16), codeVerifier: randomToken(32), returnTo, ...(acr ? { acrValues: acr } : {}) };
    const cookies = [await writeLoginCookie(login, { keys: cookieKeys, now: now(), secure, ttlSeconds: LOGIN_SECONDS })];
    if (!acr) cookies.push(...clearSessionCookies(Object.keys(parseCookieHeader(cookieHeader)), secure));
    const params = new URLSearchParams({
      // offline_access: a refresh token, so the session can follow the control plane (register the scope and the refresh_token grant).
      response_type: 'code', client_id: config.clientId!, redirect_uri: redirectUri, scope: 'openid email offline_access',
      state: login.state, nonce: login.nonce, code_challenge: computeS256Challenge(login.codeVerifier), code_challenge_method: 'S256',
    });
    if (acr) {
      params.set('acr_values', acr);
      params.set('max_age', '0');
    }
    return { location: `${controlPlane}/auth/authorize?${params}`, cookies };
  }

  // ---------- who is asking ----------
  async function identify(req: IncomingMessage, method: string, path: string, res?: ServerResponse): Promise<Identified> {
    const authorization = req.headers['authorization'];
    // Only Bearer and DPoP are API credentials; another scheme (Basic for the app itself) is left to the upstream.
    if (authorization !== undefined && /^(bearer|dpop)(\s|$)/i.test(authorization)) {
      const caller = await authenticateApiCaller(
        { method, path, authorization: authorization!, dpop: req.headers['dpop'] },
        { issuer: controlPlane, audience: publicUrl, publicUrl, keys, state, now, verifiedTokens, dpopKeys, ...(dpopNonceKeys ? { dpopNonceKeys } : {}) },
      );
      return { caller, session: null, api: true };
    }
    const cookieHeader = req.headers['cookie'];
    let session = await openSession(cookieHeader);
    if (!session) return { caller: null, session: null, api: false };
    // Only where the answer can carry the new cookie: an upgrade (no Set-Cookie through the
    // splice) goes on with the session as it is rather than spend the refresh token unseen.
    if (res && cookieHeader && refreshDue(session)) {
      sessions.delete(cookieHeader);
      const outcome = await renewedSession(session, Object.keys(parseCookieHeader(cookieHeader)));
      res.setHeader('set-cookie', outcome.cookies);
      if (!outcome.session) return { caller: null, session: null, api: false };
      session = outcome.session;
    }
    const assurance = isAssuranceLevel(session.assurance) ? session.assurance : 'recovery';
    return {
      caller: { kind: 'session', subject: session.sub, principalType: session.principalType, assurance, scopes: session.scopes ?? [], bucketId: session.sid },
      session,
      api: false,
    };
  }

  /**
   * Opens the session cookie, remembering recent openings by the exact Cookie header (bounded,
   * until the session's own expiry): a browser sends the same header on every request, and
   * decrypting it each time is the largest part of the gateway's own work per request.
   */
  async function openSession(header: string | undefined): Promise<GateSession | null> {
    if (!header) return null;
    const at = now();
    const cached = sessions.get(header, at);
    if (cached) return cached;
    const session = await readSessionCookies(parseCookieHeader(header), { keys: cookieKeys, now: at, secure });
    if (!session) return null;
    // Never cached past the moment its access token is due for refresh.
    const due = session.accessTokenExpiresAt !== undefined ? (session.accessTokenExpiresAt - REFRESH_SKEW_SECONDS) * 1000 : Infinity;
    sessions.set(header, session, Math.min((session.exp ?? 0) * 1000, at + SESSION_CACHE_MS, due), at);
    return session;
  }

  function refreshDue(session: GateSession): boolean {
    return session.accessTokenExpiresAt !== undefined && now() >= (session.accessTokenExpiresAt - REFRESH_SKEW_SECONDS) * 1000;
  }

  /**
   * The session to go on with when the presented one is due. A refresh may have happened already
   * at any replica without this browser receiving the cookie (behind forward auth the proxy may
   * not relay Set-Cookie): the newest state of each session is kept, sealed, in shared state, so
   * an old cookie moves on to it instead of spending a refresh token that was rotated already
   * (which the control plane would answer by revoking the whole family).
   */
  async function renewedSession(presented: GateSession, present: string[]): Promise<RefreshOutcome> {
    const stored = await state.get(latestSessionKey(presented.sid));
    if (stored) {
      const newest = await openSealedCookies(stored);
      if (newest && newest.session.sid === presented.sid && (newest.session.accessTokenExpiresAt ?? 0) > (presented.accessTokenExpiresAt ?? 0)) {
        if (!refreshDue(newest.session)) {
          metrics.refreshes.inc({ outcome: 'joined' });
          return newest;
        }
        return refreshSession(newest.session, present);
      }
    }
    return refreshSession(presented, present);
  }

  /**
   * Refreshes a session whose access token is due, once across every replica (issue 6 item 3):
   * the refresh token rotates at the control plane and a second use revokes the family, so
   * concurrent requests wait for the one refresh and all answer with its cookies. A refused
   * refresh ends the session; a refresh that did not finish in time is a 503 to retry.
   */
  async function refreshSession(session: GateSession, present: string[]): Promise<RefreshOutcome> {
    const signedOut: RefreshOutcome = { session: null, cookies: clearSessionCookies(present, secure) };
    const refreshToken = session.refreshToken;
    if (!refreshToken || !tokens) return signedOut;
    // Per session and per access token: the next refresh of the same session never reads this one's result.
    const key = `refresh:${session.sid}:${session.accessTokenExpiresAt}`;
    const flight = await runSingleFlight(state, key, () => renewSession(session, refreshToken, present), REFRESH_FLIGHT);
    if (!flight.ok) {
      if (flight.reason === 'timeout') {
        metrics.refreshes.inc({ outcome: 'retry' });
        throw fail('session_refresh_pending', 'another request is refreshing this session; retry', { headers: { 'retry-after': '1' } });
      }
      metrics.refreshes.inc({ outcome: 'signed_out' });
      return signedOut;
    }
    if (flight.value === REFRESH_RETRY) {
      metrics.refreshes.inc({ outcome: 'retry' });
      if (flight.leader) await forgetSingleFlight(state, key);
      throw fail('control_plane_unavailable', 'the control plane did not answer the session refresh; retry', { headers: { 'retry-after': '1' } });
    }
    const renewed = await openSealedCookies(flight.value);
    metrics.refreshes.inc({ outcome: renewed ? (flight.leader ? 'refreshed' : 'joined') : 'signed_out' });
    return renewed ?? signedOut;
  }

  /** Opens the Set-Cookie values of a sealed session as stored in shared state (JSON list). */
  async function openSealedCookies(value: string): Promise<{ session: GateSession; cookies: string[] } | null> {
    let cookies: unknown;
    try {
      cookies = JSON.parse(value);
    } catch {
      return null;
    }
    if (!Array.isArray(cookies) || !cookies.every((line) => typeof line === 'string')) return null;
    const jar: Record<string, string> = {};
    // Not parseCookieHeader: the list also clears stale names (`name=`), and a cleared single
    // cookie must not stand in for the chunks written beside it.
    for (const line of cookies as string[]) {
      const pair = line.split(';')[0] ?? '';
      const eq = pair.indexOf('=');
      if (eq > 0 && eq < pair.length - 1) jar[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    const session = await readSessionCookies(jar, { keys: cookieKeys, now: now(), secure });
    return session ? { session, cookies: cookies as string[] } : null;
  }

  /** The refresh itself (run by one request): the sealed cookies of the renewed session, never a raw token, go to shared state. */
  async function renewSession(session: GateSession, refreshToken: string, present: string[]): Promise<string> {
    let set;
    try {
      set = await tokens!.refresh(refreshToken);
    } catch (error) {
      if (isTokenEndpointError(error) && error.kind === 'unavailable') return REFRESH_RETRY;
      log.info({ event: 'gateway.session_ended', cause: 'refresh_refused', error: isTokenEndpointError(error) ? error.error : undefined }, 'the control plane refused the refresh: session over');
      throw error;
    }
    const at = now();
    const facts = set.idToken
      ? await verifyIdToken(set.idToken, { issuer: controlPlane, clientId: config.clientId ?? '', keys, now: at, nonce: null, subject: session.sub })
      : null;
    // The session keeps its absolute lifetime from sign-in; a refresh never extends it.
    const remaining = (session.exp ?? 0) - Math.floor(at / 1000);
    if (remaining <= 0) throw new Error('the session is over');
    // A refreshed token may state less than the sign-in (a step-up window closed), never more.
    const assurance = facts && (!isAssuranceLevel(session.assurance) || rankAssurance(facts.assurance) < rankAssurance(session.assurance)) ? facts.assurance : session.assurance;
    const { refreshToken: _spent, exp: _exp, ...rest } = session;
    const next: GateSession = {
      ...rest,
      assurance,
      ...(facts?.email !== undefined ? { email: facts.email, emailVerified: facts.emailVerified === true } : {}),
      scopes: set.scope.length > 0 ? set.scope : session.scopes,
      accessToken: set.accessToken,
      accessTokenExpiresAt: Math.floor(at / 1000) + set.expiresIn,
      ...(set.refreshToken ? { refreshToken: set.refreshToken } : {}),
      ...(set.idToken ? { idToken: set.idToken } : {}),
    };
    const sealed = JSON.stringify(await writeSessionCookies(next, { keys: cookieKeys, now: at, secure, ttlSeconds: remaining, present }));
    // Until the session ends: a browser whose proxy never relayed this cookie still finds it.
    await state.set(latestSessionKey(session.sid), sealed, remaining * 1000);
    return sealed;
  }

  function isBrowserNavigation(req: IncomingMessage, method: string): boolean {
    return (method === 'GET' || method === 'HEAD') && /text\/html/i.test(req.headers['accept'] ?? '');
  }

  /** The envelope (or redirect) for a refused decision. */
  function refusalFor(decision: Extract<Decision, { outcome: 'refuse' }>, who: Identified, browser: boolean, returnTo: string): Refusal {
    const scheme = who.caller?.kind === 'dpop' ? 'DPoP' : 'Bearer';
    const api = who.api || !browser;
    switch (decision.reason) {
      case 'unauthorized':
        if (!api) return { signIn: { returnTo }, reason: 'unauthorized' };
        return { error: fail('unauthorized', 'sign in or present an access token', { headers: { 'www-authenticate': `${challenge('Bearer', publicUrl)}, ${challenge('DPoP', publicUrl)}` } }) };
      case 'insufficient_user_authentication': {
        const acr = decision.requiredAssurance ?? 'sensitive';
        if (!api) return { signIn: { returnTo, acr }, reason: 'insufficient_user_authentication' };
        if (!who.api) return { error: fail('insufficient_assurance', `this route needs assurance ${acr}`, { fields: { acr_values: acr } }) };
        const description = `this route needs assurance ${acr}`;
        return { error: fail('insufficient_user_authentication', description, { headers: { 'www-authenticate': challenge(scheme, publicUrl, { error: 'insufficient_user_authentication', error_description: description, acr_values: acr }) }, fields: { error: 'insufficient_user_authentication', acr_values: acr } }) };
      }
      case 'insufficient_scope': {
        const scope = (decision.missingScopes ?? []).join(' ');
        return { error: fail('insufficient_scope', `this route needs scope ${scope}`, { headers: { 'www-authenticate': challenge(scheme, publicUrl, { error: 'insufficient_scope', scope }) }, fields: { error: 'insufficient_scope', scope } }) };
      }
      case 'dpop_required':
        return { error: fail('dpop_required', 'this route needs a DPoP-bound token and proof', { headers: { 'www-authenticate': challenge('DPoP', publicUrl, { error: 'invalid_token', error_description: 'DPoP required' }) } }) };
      case 'principal_not_allowed':
        return { error: fail('principal_not_allowed', `this route does not admit ${who.caller?.principalType ?? 'this'} principals`) };
    }
  }

  /** `audience` is the upstream origin the request goes to (the gateway's own URL in forward-auth mode). */
  async function assertionFor(caller: Caller, session: GateSession | null, audience: string): Promise<string> {
    const email = session?.emailVerified === true ? session.email : undefined;
    const key = `${audience}\u0000${caller.subject}\u0000${caller.principalType}\u0000${caller.assurance}\u0000${email ?? ''}`;
    const at = now();
    const cached = assertions.get(key, at);
    if (cached) return cached;
    // One signature per identity for half the assertion lifetime: ES256 signing per request
    // would dominate the hot path, and an assertion is a statement, not a one-time token.
    const jwt = await buildUpstreamAssertion({
      issuer: publicUrl, audience, subject: caller.subject, principalType: caller.principalType, assurance: caller.assurance,
      ...(email ? { email } : {}), now: at, ttlSeconds: config.assertionLifetime,
    }, signingKey);
    assertions.set(key, jwt, at + (config.assertionLifetime * 1000) / 2, at);
    return jwt;
  }

  async function identityHeaders(caller: Caller, session: GateSession | null, audience: string): Promise<Record<string, string>> {
    return buildIdentityHeaders({
      subject: caller.subject, principalType: caller.principalType, assurance: caller.assurance,
      ...(session?.email ? { email: session.email, emailVerified: session.emailVerified === true } : {}),
      assertion: await assertionFor(caller, session, audience),
    });
  }

  /** Runs identification and policy: who may pass, or the refusal to answer (an envelope or a redirect). */
  async function authorize(req: IncomingMessage, method: string, target: RequestTarget, forwardAuth: boolean, wantsRedirect: boolean, res?: ServerResponse): Promise<{ who: Identified; decision: Decision } | { refused: Refusal }> {
    const held = configHolder.current;
    if (!held) return { refused: { error: fail('gateway_not_configured', 'the gateway has no signed config yet') } };
    let who: Identified;
    try {
      who = await identify(req, method, target.path, res);
    } catch (error) {
      if (!isKeyplaneError(error)) throw error;
      if (held.policy.mode === 'enforce') return { refused: { error } };
      // observe / canary: a credential that does not verify cannot be placed in a canary bucket,
      // so it is observed: counted under its reason and passed on without identity.
      metrics.observed.inc({ reason: error.reason });
      log.info({ event: 'gateway.observed', reason: error.reason, path: target.path, mode: held.policy.mode }, 'would refuse');
      return { who: { caller: null, session: null, api: true }, decision: { outcome: 'allow', route: null, enforced: false, wouldRefuse: 'unauthorized' } };
    }
    const decision = evaluatePolicy(held.policy, target.path, who.caller);
    if (decision.outcome === 'refuse' || decision.enforced) lastEnforcementAt = now();
    if (decision.outcome === 'allow') {
      if (decision.wouldRefuse) {
        metrics.observed.inc({ reason: decision.wouldRefuse });
        log.info({ event: 'gateway.observed', reason: decision.wouldRefuse, path: target.path, mode: held.policy.mode }, 'would refuse');
      }
      return { who, decision };
    }
    // Only a page load is ever redirected, never an API caller or a fetch; in forward auth only
    // when the proxy relays the answer to the browser (`?redirect=1`: Traefik, Caddy).
    const browser = !who.api && isBrowserNavigation(req, method) && (!forwardAuth || wantsRedirect);
    return { refused: refusalFor(decision, who, browser, `${target.path}${target.search}`) };
  }

  // ---------- the gateway's own routes ----------
  async function ownRoute(res: ServerResponse, path: string): Promise<void> {
    if (path === '/healthz') return sendJson(res, 200, { ok: true });
    if (path === '/readyz') {
      const held = configHolder.current;
      if (!held) return sendJson(res, 503, { ok: false, reason: 'gateway_not_configured', message: 'the gateway has no signed config yet' });
      return sendJson(res, 200, { ok: true, configVersion: held.version });
    }
    res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
    res.end(await metrics.registry.metrics());
  }

  async function gateRoute(req: IncomingMessage, res: ServerResponse, target: RequestTarget, view: ClientView): Promise<void> {
    const method = req.method ?? 'GET';
    const query = new URLSearchParams(target.search);
    switch (target.path) {
      case '/_gate/jwks':
        if (method !== 'GET' && method !== 'HEAD') return sendError(res, fail('method_not_allowed'));
        return sendJson(res, 200, { keys: [signingKey.publicJwk] }, { 'cache-control': 'public, max-age=300' });
      case '/_gate/auth':
        return forwardAuth(req, res, view, query.get('redirect') === '1');
      case '/_gate/signin':
        if (method !== 'GET') return sendError(res, fail('method_not_allowed'));
        return signin(req, res, query);
      case '/_gate/signout':
        if (method !== 'GET' && method !== 'POST') return sendError(res, fail('method_not_allowed'));
        return signout(req, res, query);
      case '/_gate/callback':
        if (method !== 'GET') return sendError(res, fail('method_not_allowed'));
        return callback(req, res, query);
      default:
        return sendError(res, fail('not_found'));
    }
  }

  /** Sends the refusal: a browser straight to the control plane's authorize (CONTRACT), anyone else the envelope. */
  async function refuse(req: IncomingMessage, res: ServerResponse, refused: Refusal): Promise<void> {
    if (refused.signIn === undefined) return sendError(res, refused.error);
    if (!config.clientId) return sendError(res, fail('not_ready', 'the gateway has no client id at the control plane'));
    countRefusal(refused.reason);
    // The request's own path, but held to the same rule as `rd`: `//host/…` must never become a Location.
    const returnTo = validateReturnUrl(refused.signIn.returnTo, publicUrl) ?? '/';
    const { location, cookies } = await startSignIn(req.headers['cookie'], returnTo, refused.signIn.acr);
    return redirect(res, location, cookies);
  }

  /** `/_gate/auth` for nginx auth_request, Traefik ForwardAuth and Caddy forward_auth (CONTRACT, STYLE 12). */
  async function forwardAuth(req: IncomingMessage, res: ServerResponse, view: ClientView, wantsRedirect: boolean): Promise<void> {
    // Original method and URI are believed only from a trusted proxy; otherwise they were dropped.
    const method = view.originalMethod ?? 'GET';
    const target = normalizeRequestTarget(view.originalUri ?? '/');
    if (!target) return sendError(res, fail('invalid_path', 'the original URI is not acceptable'));
    const result = await authorize(req, method, target, true, wantsRedirect, res);
    if ('refused' in result) return refuse(req, res, result.refused);
    countPassed(result.decision);
    // The assertion names the app the original URI belongs to when the gateway knows it, else the gateway itself.
    const headers = result.who.caller ? await identityHeaders(result.who.caller, result.who.session, upstreams.find(target.path)?.origin ?? publicUrl) : {};
    res.writeHead(200, { ...headers, 'cache-control': 'no-store', 'content-length': '0' });
    res.end();
  }

  async function signin(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    if (!config.clientId) return sendError(res, fail('not_ready', 'the gateway has no client id at the control plane'));
    const returnTo = validateReturnUrl(query.get('rd') ?? '/', publicUrl);
    if (!returnTo) return sendError(res, fail('invalid_return', 'the return URL must be a path on this gateway'));
    const acr = query.get('acr_values') ?? undefined;
    if (acr !== undefined && !isAssuranceLevel(acr)) return sendError(res, fail('invalid_request', 'acr_values must be an assurance level'));
    const { location, cookies } = await startSignIn(req.headers['cookie'], returnTo, acr);
    redirect(res, location, cookies);
  }

  /**
   * `/_gate/callback` (RFC 6749 §4.1.2, OIDC Core §3.1.2.5): the login cookie of this `state`
   * (one use: cleared in every answer), RFC 9207 `iss`, the code exchanged with the PKCE verifier,
   * the ID token verified (nonce of this login), the requested assurance met, then a new
   * session replaces any old one (session fixation) and the browser returns to where it was.
   * Every refusal is an envelope, never a redirect back into sign-in, so nothing loops.
   */
  async function callback(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    if (!config.clientId || !tokens) return sendError(res, fail('not_ready', 'the gateway has no client credentials for the control plane'));
    const cookies = parseCookieHeader(req.headers['cookie']);
    const stateParam = query.get('state') ?? '';
    const login = stateParam ? await readLoginCookie(cookies, stateParam, { keys: cookieKeys, now: now(), secure }) : null;
    const cleared = login ? [clearCookie(loginCookieName(login.state, secure), secure)] : [];
    const refuseWith = (error: KeyplaneError) => sendError(res, error, cleared.length > 0 ? { 'set-cookie': cleared } : {});
    if (!login) return refuseWith(fail('sign_in_expired', 'this sign-in is unknown, expired or finished already; start again from the app'));
    // RFC 9207 §2.4: a response naming another issuer belongs to another authorization server (mix-up).
    const iss = query.get('iss');
    if (iss !== null && iss !== controlPlane) return refuseWith(fail('issuer_mismatch', 'the sign-in response comes from another issuer'));
    const error = query.get('error');
    if (error !== null) {
      const code = /^[a-z_]{1,64}$/.test(error) ? error : 'invalid_request';
      return refuseWith(fail('sign_in_refused', code === 'access_denied' ? 'the sign-in was declined' : `the control plane refused the sign-in (${code})`, { fields: { error: code } }));
    }
    const code = query.get('code');
    if (!code) return refuseWith(fail('invalid_request', 'the callback carries no code'));
    let set;
    try {
      set = await tokens.exchangeCode({ code, codeVerifier: login.codeVerifier, redirectUri });
    } catch (failure) {
      if (!isTokenEndpointError(failure)) throw failure;
      if (failure.kind === 'unavailable') return refuseWith(fail('control_plane_unavailable', 'the control plane did not answer the sign-in; try again', { headers: { 'retry-after': '1' } }));
      if (failure.error === 'invalid_grant') return refuseWith(fail('invalid_grant', 'the sign-in code is spent or expired; start again from the app'));
      return refuseWith(fail('sign_in_refused', `the control plane refused the code exchange (${failure.error ?? 'error'})`, { fields: { error: failure.error ?? 'invalid_request' } }));
    }
    if (!set.idToken) return refuseWith(fail('invalid_id_token', 'the control plane sent no ID token'));
    const at = now();
    let facts;
    try {
      facts = await verifyIdToken(set.idToken, { issuer: controlPlane, clientId: config.clientId, keys, now: at, nonce: login.nonce });
    } catch (failure) {
      if (!isKeyplaneError(failure)) throw failure;
      return refuseWith(failure);
    }
    // The level asked for with acr_values must be what the control plane proved; asking again would loop.
    if (login.acrValues && (!isAssuranceLevel(login.acrValues) || !meetsAssurance(facts.assurance, login.acrValues))) {
      return refuseWith(fail('insufficient_assurance', `this needs assurance ${login.acrValues}; the sign-in reached ${facts.assurance}`, { fields: { acr_values: login.acrValues } }));
    }
    const session: GateSession = {
      sid: randomToken(16),
      sub: facts.sub,
      principalType: facts.principalType,
      assurance: facts.assurance,
      ...(facts.email !== undefined ? { email: facts.email, emailVerified: facts.emailVerified === true } : {}),
      scopes: set.scope,
      ...(facts.authTime !== undefined ? { authTime: facts.authTime } : {}),
      accessToken: set.accessToken,
      accessTokenExpiresAt: Math.floor(at / 1000) + set.expiresIn,
      ...(set.refreshToken ? { refreshToken: set.refreshToken } : {}),
      idToken: set.idToken,
    };
    // A new sid and every old session cookie (chunks too) replaced: nothing from before the sign-in survives it.
    const written = await writeSessionCookies(session, { keys: cookieKeys, now: at, secure, ttlSeconds: config.sessionLifetime, present: Object.keys(cookies) });
    log.info({ event: 'gateway.signed_in', assurance: session.assurance, principalType: session.principalType }, 'signed in');
    redirect(res, `${publicUrl}${login.returnTo}`, [...cleared, ...written]);
  }

  async function signout(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    const cookies = parseCookieHeader(req.headers['cookie']);
    const session = await readSessionCookies(cookies, { keys: cookieKeys, now: now(), secure });
    const cleared = clearSessionCookies(Object.keys(cookies), secure);
    // A copy of an older cookie must not move on to the newest state of this session.
    if (session) await state.del(latestSessionKey(session.sid));
    const returnTo = validateReturnUrl(query.get('rd') ?? '/', publicUrl) ?? '/';
    if (session && config.clientId) {
      // RP-initiated logout at the control plane, which comes back to this gateway's root.
      const params = new URLSearchParams({ client_id: config.clientId, post_logout_redirect_uri: `${publicUrl}/` });
      if (session.idToken) params.set('id_token_hint', session.idToken);
      return redirect(res, `${controlPlane}/auth/logout?${params}`, cleared);
    }
    redirect(res, `${publicUrl}${returnTo}`, cleared);
  }

  // ---------- the proxy path ----------
  /** The request's headers as the upstream gets them: the gateway's cookies out, its identity headers in. */
  async function upstreamHeaders(req: IncomingMessage, who: Identified, origin: string): Promise<Record<string, string | string[] | undefined>> {
    const headers = { ...req.headers };
    // The gateway's own cookies stay at the edge: the upstream never sees session tokens.
    const cookie = headers['cookie'];
    if (cookie) {
      const kept = cookie.split(';').map((part) => part.trim()).filter((part) => part && !/^(__Host-)?kp_gate_/.test(part));
      if (kept.length > 0) headers['cookie'] = kept.join('; ');
      else delete headers['cookie'];
    }
    if (who.caller) Object.assign(headers, await identityHeaders(who.caller, who.session, origin));
    return headers;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // First of all: no identity header from the client survives, in any spelling; then the
    // hop-by-hop ones go, before the gateway sets any header a `Connection` list could name.
    stripIdentityHeaders(req.headers);
    const body = hasBody(req);
    dropHopByHop(req.headers);
    const target = normalizeRequestTarget(req.url);
    if (!target) return sendError(res, fail('invalid_path', 'the request path is not acceptable'));
    const method = req.method ?? 'GET';
    if ((method === 'GET' || method === 'HEAD') && OWN_PATHS.has(target.path)) return ownRoute(res, target.path);
    const view = applyForwarded(req);
    if (target.path === '/_gate' || target.path.startsWith('/_gate/')) return gateRoute(req, res, target, view);

    const result = await authorize(req, method, target, false, false, res);
    if ('refused' in result) return refuse(req, res, result.refused);
    const upstream = upstreams.find(target.path);
    if (!upstream) return sendError(res, fail('upstream_unavailable', 'no upstream serves this path (forward-auth only)'));
    const headers = await upstreamHeaders(req, result.who, upstream.origin);
    countPassed(result.decision);
    await upstream.proxy.forward({ req, res, target: `${target.path}${target.search}`, headers, body });
  }

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    stripIdentityHeaders(req.headers);
    const upgradeTo = req.headers['upgrade'];
    dropHopByHop(req.headers);
    const refuse = (error: KeyplaneError) => {
      countRefusal(error.reason);
      const body = JSON.stringify(error.toEnvelope());
      socket.end(`HTTP/1.1 ${error.status} ${error.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    };
    const target = normalizeRequestTarget(req.url);
    if (!target) return refuse(fail('invalid_path'));
    applyForwarded(req);
    const result = await authorize(req, req.method ?? 'GET', target, false, false);
    if ('refused' in result) return refuse(result.refused.signIn === undefined ? result.refused.error : fail('unauthorized', 'sign in first'));
    const upstream = upstreams.find(target.path);
    if (!upstream) return refuse(fail('upstream_unavailable', 'no upstream serves this path (forward-auth only)'));
    const headers = await upstreamHeaders(req, result.who, upstream.origin);
    headers['connection'] = 'Upgrade';
    if (upgradeTo) headers['upgrade'] = upgradeTo;
    req.headers = headers as IncomingMessage['headers'];
    req.url = `${target.path}${target.search}`;
    countPassed(result.decision);
    upstream.proxy.upgrade(req, socket, head);
  }

  function internalError(error: unknown, answer: () => void): void {
    log.error({ err: { message: (error as Error)?.message } }, 'gateway request failed');
    metrics.requests.inc({ outcome: 'internal' });
    answer();
  }

  async function evidence(ttlSeconds = 60): Promise<string> {
    const held = configHolder.current;
    const byLabel = async (metric: { get(): Promise<{ values: Array<{ value: number; labels: Record<string, string | number | undefined> }> }> }, label: string) => {
      const out: Record<string, number> = {};
      for (const value of (await metric.get()).values) {
        const key = String(value.labels[label]);
        out[key] = (out[key] ?? 0) + value.value;
      }
      return out;
    };
    const outcomes = await byLabel(metrics.requests, 'outcome');
    return buildGatewayEvidence({
      issuer: publicUrl, audience: controlPlane, clientId: config.clientId ?? '',
      config: held ? { version: held.version, hash: held.hash, mode: held.policy.mode } : null,
      counts: { allowed: outcomes['allowed'] ?? 0, refused: await byLabel(metrics.refusals, 'reason'), observed: await byLabel(metrics.observed, 'reason') },
      instance, lastEnforcementAt, startedAt, now: now(), ttlSeconds,
    }, signingKey);
  }

  return {
    publicUrl,
    config,
    evidence,
    configHolder,
    metrics,
    signingKey,
    cookieKeys,
    state,
    log,
    handleRequest(req, res) {
      handle(req, res).catch((error: unknown) => internalError(error, () => {
        if (!res.headersSent) sendJson(res, 500, { ok: false, reason: 'internal' });
        else res.destroy();
      }));
    },
    handleUpgrade(req, socket, head) {
      socket.on('error', () => socket.destroy());
      upgrade(req, socket, head).catch((error: unknown) => internalError(error, () => socket.destroy()));
    },
    async close(force = false) {
      await upstreams.close(force);
      if (ownsState) await state.close();
    },
  };
}

/** The upstreams by path prefix (`upstreams`, then `upstream` for everything else), one keep-alive pool per origin. */
function routeUpstreams(config: GatewayConfig, open: (origin: string) => UpstreamProxy) {
  const pools = new Map<string, UpstreamProxy>();
  const routes = [...config.upstreams, ...(config.upstream ? [{ path: '/', url: config.upstream }] : [])].map(({ path, url }) => {
    const origin = new URL(url).origin;
    let proxy = pools.get(origin);
    if (!proxy) pools.set(origin, (proxy = open(origin)));
    return { path, origin, proxy };
  });
  return {
    find: (path: string) => findRoute(routes, path),
    async close(force: boolean) {
      await Promise.all([...pools.values()].map((proxy) => (force ? proxy.destroy() : proxy.close())));
    },
  };
}
