import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { JWTVerifyGetKey } from 'jose';
import { pino, type Logger } from 'pino';
import type { GatewayConfig } from '../../config/types.js';
import { isAssuranceLevel } from '../../lib/assurance/assurance.js';
import { fail, isKeyplaneError, type KeyplaneError } from '../../lib/errors/keyplane-error.js';
import type { Reason } from '../../lib/errors/reasons.js';
import { buildUpstreamAssertion } from '../../lib/gateway/assertion.js';
import { buildGatewayEvidence } from '../../lib/gateway/evidence.js';
import { applyForwardedHeaders, type ClientView } from '../../lib/gateway/forwarded.js';
import { buildIdentityHeaders, stripIdentityHeaders } from '../../lib/gateway/identity-headers.js';
import { evaluatePolicy, type Caller, type Decision } from '../../lib/gateway/policy.js';
import { normalizeRequestTarget, type RequestTarget } from '../../lib/gateway/request-path.js';
import { validateReturnUrl } from '../../lib/gateway/return-url.js';
import {
  LOGIN_COOKIE, SESSION_COOKIE, clearSessionCookies, parseCookieHeader, readSessionCookies, writeLoginCookie, type CookieKey, type GateSession,
} from '../../lib/gateway/session-cookie.js';
import { GatewayConfigHolder, type ConfigStore } from '../../lib/gateway/signed-config.js';
import { computeS256Challenge } from '../../lib/pkce/check-pkce.js';
import { MemorySharedState, type SharedState } from '../../lib/runtime/shared-state/index.js';
import { compileAddressList } from '../../lib/util/cidr.js';
import { randomToken } from '../../lib/util/random.js';
import { authenticateApiCaller, challenge, remoteControlPlaneKeys } from './bearer.js';
import { fileConfigStore } from './config-store.js';
import { loadCookieKeys, loadOrCreateSigningKey, type GatewaySigningKey } from './keys.js';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.js';
import { UpstreamProxy, dropHopByHop, hasBody } from './proxy.js';

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
  /** A signed evidence report of what this gateway holds and did (not yet sent anywhere: the control plane's endpoint is to come). */
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

type Refusal = { redirect: string; reason: Reason } | { redirect?: undefined; error: KeyplaneError };

interface Identified {
  caller: Caller | null;
  session: GateSession | null;
  /** The caller sent Bearer or DPoP: never redirected. */
  api: boolean;
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
  const controlPlane = config.controlPlane.replace(/\/$/, '');
  const keys = deps.controlPlaneKeys ?? remoteControlPlaneKeys(controlPlane);
  const configHolder = new GatewayConfigHolder({ issuer: controlPlane, clientId: config.clientId ?? '', store: deps.configStore ?? fileConfigStore(config.dataDir) });
  heldVersion = () => configHolder.current?.version ?? 0;
  const upstreamOrigin = config.upstream ? new URL(config.upstream).origin : undefined;
  const proxy = config.upstream
    ? new UpstreamProxy({
      upstream: config.upstream,
      connections: config.upstreamConnections,
      headersTimeoutMs: config.upstreamTimeout * 1000,
      onHeaders: (ms) => metrics.upstreamSeconds.observe(ms / 1000),
    })
    : undefined;
  const assertions = new Map<string, { jwt: string; until: number }>();
  const startedAt = now();
  let lastEnforcementAt: number | null = null;
  const sessions = new Map<string, { session: GateSession; exp: number }>();

  // ---------- responses ----------
  function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
    res.end(JSON.stringify(body));
  }

  function sendError(res: ServerResponse, error: KeyplaneError, extraHeaders: Record<string, string | string[]> = {}): void {
    metrics.refusals.inc({ reason: error.reason });
    metrics.requests.inc({ outcome: 'refused' });
    sendJson(res, error.status, error.toEnvelope(), { ...error.headers, ...extraHeaders });
  }

  function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
    res.writeHead(302, { location, 'cache-control': 'no-store', ...(cookies.length > 0 ? { 'set-cookie': cookies } : {}) });
    res.end();
  }

  function signinUrl(returnTo: string, acr?: string): string {
    const params = new URLSearchParams({ rd: returnTo });
    if (acr) params.set('acr_values', acr);
    return `${publicUrl}/_gate/signin?${params}`;
  }

  // ---------- who is asking ----------
  async function identify(req: IncomingMessage, method: string, path: string): Promise<Identified> {
    const authorization = req.headers['authorization'];
    // Only Bearer and DPoP are API credentials; another scheme (Basic for the app itself) is left to the upstream.
    if (authorization !== undefined && /^(bearer|dpop)(\s|$)/i.test(authorization)) {
      const caller = await authenticateApiCaller(
        { method, path, authorization: authorization!, dpop: req.headers['dpop'] },
        { issuer: controlPlane, audience: publicUrl, publicUrl, keys, state, now },
      );
      return { caller, session: null, api: true };
    }
    const session = await openSession(req.headers['cookie']);
    if (!session) return { caller: null, session: null, api: false };
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
    const cached = sessions.get(header);
    if (cached && cached.exp > at) return cached.session;
    const session = await readSessionCookies(parseCookieHeader(header), { keys: cookieKeys, now: at, secure });
    if (!session) return null;
    if (sessions.size >= SESSION_CACHE_LIMIT) sessions.clear();
    sessions.set(header, { session, exp: Math.min((session.exp ?? 0) * 1000, at + SESSION_CACHE_MS) });
    return session;
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
        if (!api) return { redirect: signinUrl(returnTo), reason: 'unauthorized' };
        return { error: fail('unauthorized', 'sign in or present an access token', { headers: { 'www-authenticate': `${challenge('Bearer', publicUrl)}, ${challenge('DPoP', publicUrl)}` } }) };
      case 'insufficient_user_authentication': {
        const acr = decision.requiredAssurance ?? 'sensitive';
        if (!api) return { redirect: signinUrl(returnTo, acr), reason: 'insufficient_user_authentication' };
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

  async function assertionFor(caller: Caller, session: GateSession | null): Promise<string> {
    const audience = upstreamOrigin ?? publicUrl;
    const email = session?.emailVerified === true ? session.email : undefined;
    const key = `${caller.subject}\u0000${caller.principalType}\u0000${caller.assurance}\u0000${email ?? ''}`;
    const at = now();
    const cached = assertions.get(key);
    if (cached && cached.until > at) return cached.jwt;
    // One signature per identity for half the assertion lifetime: ES256 signing per request
    // would dominate the hot path, and an assertion is a statement, not a one-time token.
    const jwt = await buildUpstreamAssertion({
      issuer: publicUrl, audience, subject: caller.subject, principalType: caller.principalType, assurance: caller.assurance,
      ...(email ? { email } : {}), now: at, ttlSeconds: config.assertionLifetime,
    }, signingKey);
    if (assertions.size >= ASSERTION_CACHE_LIMIT) assertions.clear();
    assertions.set(key, { jwt, until: at + (config.assertionLifetime * 1000) / 2 });
    return jwt;
  }

  async function identityHeaders(caller: Caller, session: GateSession | null): Promise<Record<string, string>> {
    return buildIdentityHeaders({
      subject: caller.subject, principalType: caller.principalType, assurance: caller.assurance,
      ...(session?.email ? { email: session.email, emailVerified: session.emailVerified === true } : {}),
      assertion: await assertionFor(caller, session),
    });
  }

  /** Runs identification and policy: who may pass, or the refusal to answer (an envelope or a redirect). */
  async function authorize(req: IncomingMessage, method: string, target: RequestTarget, forwardAuth: boolean, wantsRedirect: boolean): Promise<{ who: Identified; decision: Decision } | { refused: Refusal }> {
    const held = configHolder.current;
    if (!held) return { refused: { error: fail('gateway_not_configured', 'the gateway has no signed config yet') } };
    let who: Identified;
    try {
      who = await identify(req, method, target.path);
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
    // Forward auth: the proxy asks for redirects (`?redirect=1`); the gateway's own proxy path decides by the request.
    const browser = forwardAuth ? wantsRedirect && !who.api : isBrowserNavigation(req, method);
    return { refused: refusalFor(decision, who, browser, `${target.path}${target.search}`) };
  }

  // ---------- the gateway's own routes ----------
  async function ownRoute(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
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
        // The code exchange needs the control plane's /auth/token (issue 5); until it is wired
        // the callback says so instead of pretending.
        return sendError(res, fail('not_ready', 'the sign-in callback is not available yet'));
      default:
        return sendError(res, fail('not_found'));
    }
  }

  /** Answers a refused request: a redirect (sign-in or step-up, counted here) or the envelope. */
  function refuse(res: ServerResponse, refused: Extract<Awaited<ReturnType<typeof authorize>>, { refused: unknown }>['refused']): void {
    if (refused.redirect !== undefined) {
      metrics.requests.inc({ outcome: 'refused' });
      metrics.refusals.inc({ reason: refused.reason });
      return redirect(res, refused.redirect);
    }
    return sendError(res, refused.error);
  }

  /** `/_gate/auth` for nginx auth_request, Traefik ForwardAuth and Caddy forward_auth (CONTRACT, STYLE 12). */
  async function forwardAuth(req: IncomingMessage, res: ServerResponse, view: ClientView, wantsRedirect: boolean): Promise<void> {
    // Original method and URI are believed only from a trusted proxy; otherwise they were dropped.
    const method = view.originalMethod ?? 'GET';
    const target = normalizeRequestTarget(view.originalUri ?? '/');
    if (!target) return sendError(res, fail('invalid_path', 'the original URI is not acceptable'));
    const result = await authorize(req, method, target, true, wantsRedirect);
    if ('refused' in result) return refuse(res, result.refused);
    metrics.requests.inc({ outcome: result.decision.outcome === 'allow' && result.decision.wouldRefuse ? 'observed' : 'allowed' });
    const headers = result.who.caller ? await identityHeaders(result.who.caller, result.who.session) : {};
    res.writeHead(200, { ...headers, 'cache-control': 'no-store', 'content-length': '0' });
    res.end();
  }

  async function signin(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    if (!config.clientId) return sendError(res, fail('not_ready', 'the gateway has no client id at the control plane'));
    const returnTo = validateReturnUrl(query.get('rd') ?? '/', publicUrl);
    if (!returnTo) return sendError(res, fail('invalid_return', 'the return URL must be a path on this gateway'));
    const acr = query.get('acr_values') ?? undefined;
    if (acr !== undefined && !isAssuranceLevel(acr)) return sendError(res, fail('invalid_request', 'acr_values must be an assurance level'));
    const login = { state: randomToken(16), nonce: randomToken(16), codeVerifier: randomToken(32), returnTo, ...(acr ? { acrValues: acr } : {}) };
    const cookies = [await writeLoginCookie(login, { keys: cookieKeys, now: now(), secure, ttlSeconds: LOGIN_SECONDS })];
    // A fresh sign-in starts from no session (session fixation, GHSA-f24x-5g9q-753f); a step-up keeps it until it succeeds.
    if (!acr) cookies.push(...clearSessionCookies(Object.keys(parseCookieHeader(req.headers['cookie'])), secure));
    const params = new URLSearchParams({
      response_type: 'code', client_id: config.clientId, redirect_uri: `${publicUrl}/_gate/callback`, scope: 'openid email',
      state: login.state, nonce: login.nonce, code_challenge: computeS256Challenge(login.codeVerifier), code_challenge_method: 'S256',
    });
    // RFC 9470 §4: ask for the level, and for a fresh authentication.
    if (acr) {
      params.set('acr_values', acr);
      params.set('max_age', '0');
    }
    redirect(res, `${controlPlane}/auth/authorize?${params}`, cookies);
  }

  async function signout(req: IncomingMessage, res: ServerResponse, query: URLSearchParams): Promise<void> {
    const cookies = parseCookieHeader(req.headers['cookie']);
    const session = await readSessionCookies(cookies, { keys: cookieKeys, now: now(), secure });
    const cleared = clearSessionCookies(Object.keys(cookies), secure);
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
  function upstreamHeaders(req: IncomingMessage): Record<string, string | string[] | undefined> {
    const headers = { ...req.headers };
    // The gateway's own cookies stay at the edge: the upstream never sees session tokens.
    const cookie = headers['cookie'];
    if (cookie) {
      const kept = cookie.split(';').map((part) => part.trim()).filter((part) => part && !/^(__Host-)?kp_gate_/.test(part));
      if (kept.length > 0) headers['cookie'] = kept.join('; ');
      else delete headers['cookie'];
    }
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
    if ((method === 'GET' || method === 'HEAD') && OWN_PATHS.has(target.path)) return ownRoute(req, res, target.path);
    const view = applyForwardedHeaders(req.headers, { remoteAddress: req.socket.remoteAddress ?? '', encrypted: Boolean((req.socket as TLSSocket).encrypted) }, trustOf(req));
    if (target.path === '/_gate' || target.path.startsWith('/_gate/')) return gateRoute(req, res, target, view);

    const result = await authorize(req, method, target, false, false);
    if ('refused' in result) return refuse(res, result.refused);
    if (!proxy) return sendError(res, fail('upstream_unavailable', 'this gateway has no upstream (forward-auth only)'));
    const headers = upstreamHeaders(req);
    if (result.who.caller) Object.assign(headers, await identityHeaders(result.who.caller, result.who.session));
    metrics.requests.inc({ outcome: result.decision.outcome === 'allow' && result.decision.wouldRefuse ? 'observed' : 'allowed' });
    await proxy.forward({ req, res, target: `${target.path}${target.search}`, headers, body });
  }

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    stripIdentityHeaders(req.headers);
    const upgradeTo = req.headers['upgrade'];
    dropHopByHop(req.headers);
    const refuse = (error: KeyplaneError) => {
      metrics.refusals.inc({ reason: error.reason });
      metrics.requests.inc({ outcome: 'refused' });
      const body = JSON.stringify(error.toEnvelope());
      socket.end(`HTTP/1.1 ${error.status} ${error.reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    };
    const target = normalizeRequestTarget(req.url);
    if (!target) return refuse(fail('invalid_path'));
    applyForwardedHeaders(req.headers, { remoteAddress: req.socket.remoteAddress ?? '', encrypted: Boolean((req.socket as TLSSocket).encrypted) }, trustOf(req));
    const result = await authorize(req, req.method ?? 'GET', target, false, false);
    if ('refused' in result) return refuse(result.refused.redirect === undefined ? result.refused.error : fail('unauthorized', 'sign in first'));
    if (!proxy) return refuse(fail('upstream_unavailable', 'this gateway has no upstream'));
    const headers = upstreamHeaders(req);
    if (result.who.caller) Object.assign(headers, await identityHeaders(result.who.caller, result.who.session));
    headers['connection'] = 'Upgrade';
    if (upgradeTo) headers['upgrade'] = upgradeTo;
    req.headers = headers as IncomingMessage['headers'];
    req.url = `${target.path}${target.search}`;
    metrics.requests.inc({ outcome: 'allowed' });
    proxy.upgrade(req, socket, head);
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
      lastEnforcementAt, startedAt, now: now(), ttlSeconds,
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
      if (force) await proxy?.destroy();
      else await proxy?.close();
      if (ownsState) await state.close();
    },
  };
}

export { SESSION_COOKIE, LOGIN_COOKIE };
