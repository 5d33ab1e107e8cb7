import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { JWTVerifyGetKey } from 'jose';
import { pino, type Logger } from 'pino';
import { DpopKeyCache } from '#lib/dpop/key-cache.js';
import { DEPENDENCIES, isDependencyUnavailable, unavailableFailure } from '#lib/errors/dependency-outage.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { logDestination } from '#lib/runtime/log-destination.js';
import { buildGatewayEvidence } from '#lib/gateway-protocol/evidence.js';
import type { Decision } from '#lib/gateway-protocol/policy.js';
import type { ClientView } from '#lib/gateway-protocol/forwarded.js';
import { stripIdentityHeaders } from '#lib/gateway-protocol/identity-headers.js';
import { checkSingletonFields } from '#lib/gateway-protocol/request-head.js';
import { normalizeRequestTarget, type RequestTarget } from '#lib/gateway-protocol/request-path.js';
import type { CookieKey } from '#lib/gateway-protocol/session-cookie.js';
import { GatewayConfigHolder, type ConfigStore } from '#lib/gateway-protocol/signed-config.js';
import { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import { MemorySharedState, type SharedState } from '#lib/runtime/shared-state/index.js';
import { ExpiringCache } from '#lib/runtime/expiring-cache.js';
import { randomToken } from '#lib/crypto/random.js';
import { redactUrl, requestIdFor } from '#lib/logging/request-log.js';
import { authorize } from './authorize.js';
import { checkToolCalls, serveProtectedResourceMetadata } from './mcp.js';
import { deriveDpopNonceKeys, guardKeys, remoteControlPlaneKeys } from './bearer.js';
import { fileConfigStore } from './config-store.js';
import { createForwardedReader, createPeerTrust, type GatewayContext, type ResolvedGatewayConfig } from './context.js';
import { EndedSessions } from './ended-sessions.js';
import { forwardAuth } from './forward-auth.js';
import { loadCookieKeys, loadOrCreateSigningKey, type GatewaySigningKey } from './keys.js';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.js';
import { chooseLanguage } from './locale.js';
import { callback, refuse, signin, signout } from './page-flow.js';
import { UpstreamProxy, endToEnd, hasBody } from './proxy.js';
import { countPassed, countUpstreamFailure, sendEnvelope, sendError, sendJson } from './respond.js';
import { createTokenClient, type TokenClient } from './token-client.js';
import { upgrade } from './upgrades.js';
import { routeUpstreams } from './upstreams.js';
import { upstreamHeaders } from './identity.js';
import { forwardTraced, nameRequestSpan, traceRequest, traceUpgrade } from './tracing.js';
import { startTracing, type Tracing } from '#lib/telemetry/tracing.js';

export type { ResolvedGatewayConfig } from './context.js';

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
  /** Hears of Redis and control-plane outages (shared with the shared state and config pull `startGateway` opens). */
  monitor?: DependencyMonitor;
  /** Traces to record into instead of the configured `telemetry` (tests). */
  tracing?: Tracing;
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
  tracing: Tracing;
  /** A signed evidence report of what this gateway holds and did (pushed to the control plane by `startGateway`). */
  evidence(ttlSeconds?: number): Promise<string>;
  handleRequest(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Stops the upstream pool (in-flight requests finish first unless `force`). */
  close(force?: boolean): Promise<void>;
}

/** Each request's client as the forwarded headers were believed, for its access log line. */
const clientViews = new WeakMap<IncomingMessage, ClientView>();

const OWN_PATHS = new Set(['/healthz', '/readyz', '/metrics']);
/** The reserved endpoints `gateRoute` serves, each its own route template in traces. */
const GATE_PATHS = new Set([
  '/_gate/jwks',
  '/_gate/auth',
  '/_gate/signin',
  '/_gate/signout',
  '/_gate/callback',
  '/_gate/lang',
]);
/** MCP Streamable HTTP's methods, with HEAD beside GET and OPTIONS for a browser client's preflight. */
const MCP_METHODS = new Set(['POST', 'GET', 'HEAD', 'DELETE', 'OPTIONS']);
const MCP_ALLOW = [...MCP_METHODS].join(', ');
const ASSERTION_CACHE_LIMIT = 10_000;
const SESSION_CACHE_LIMIT = 10_000;
/** Verified access tokens and imported DPoP proof keys (each saves an ES256 verification or a key import per request). */
const TOKEN_CACHE_LIMIT = 10_000;

/** Builds the gateway's context once: keys, caches, the config holder and the upstream pools. */
async function buildContext(config: ResolvedGatewayConfig, deps: GatewayDeps): Promise<GatewayContext> {
  const now = deps.now ?? Date.now;
  const publicUrl = config.publicUrl.replace(/\/$/, '');
  const controlPlane = config.controlPlane.replace(/\/$/, '');
  const log = pino({ level: config.logLevel, base: { service: 'gateway' } }, deps.logStream ?? logDestination());
  let heldVersion = (): number => 0;
  const metrics = createGatewayMetrics(() => heldVersion());
  const cookieKeys = loadCookieKeys(config.cookieKeys, config.dataDir);
  const dependencies = deps.monitor ?? new DependencyMonitor({ now });
  watchDependencies(dependencies, log, metrics);
  const tracing = deps.tracing ?? startTracing(config.telemetry);
  // The code exchange and refreshes need the client's secret (client_secret_basic).
  const tokens =
    deps.tokenClient ??
    (config.clientId && config.clientSecret
      ? createTokenClient({
          controlPlane,
          clientId: config.clientId,
          clientSecret: config.clientSecret,
          timeoutMs: config.controlPlaneTimeoutMs,
          monitor: dependencies,
          ...(tracing.enabled ? { tracer: tracing.tracer } : {}),
        })
      : undefined);
  const holder = new GatewayConfigHolder({
    issuer: controlPlane,
    clientId: config.clientId ?? '',
    store: deps.configStore ?? fileConfigStore(config.dataDir),
  });
  heldVersion = () => holder.current?.version ?? 0;
  const dpopNonceKeys = config.dpopNonce ? deriveDpopNonceKeys(cookieKeys) : undefined;
  const context: Omit<GatewayContext, 'endedSessions'> = {
    config,
    publicUrl,
    controlPlane,
    now,
    log,
    metrics,
    cookieKeys,
    holder,
    secure: publicUrl.startsWith('https://'),
    redirectUri: `${publicUrl}/_gate/callback`,
    state: deps.state ?? new MemorySharedState(),
    dependencies,
    keys: guardKeys(
      deps.controlPlaneKeys ?? remoteControlPlaneKeys(controlPlane, config.controlPlaneTimeoutMs),
      dependencies,
    ),
    signingKey: await loadOrCreateSigningKey(config.dataDir),
    ...(dpopNonceKeys ? { dpopNonceKeys } : {}),
    ...(tokens ? { tokens } : {}),
    upstreams: routeUpstreams(
      config,
      (origin) =>
        new UpstreamProxy({
          upstream: origin,
          connections: config.upstreamConnections,
          headersTimeoutMs: config.upstreamTimeout * 1000,
          onHeaders: (ms) => metrics.upstreamSeconds.observe(ms / 1000),
        }),
    ),
    caches: {
      sessions: new ExpiringCache(SESSION_CACHE_LIMIT),
      verifiedTokens: new ExpiringCache(TOKEN_CACHE_LIMIT),
      exchangedTokens: new ExpiringCache(TOKEN_CACHE_LIMIT),
      dpopKeys: new DpopKeyCache(TOKEN_CACHE_LIMIT),
      assertions: new ExpiringCache(ASSERTION_CACHE_LIMIT),
    },
    enforcement: { lastAt: null },
    tracing,
    applyForwarded: createForwardedReader(config.trustedProxies, publicUrl),
    trustsPeer: createPeerTrust(config.trustedProxies),
  };
  // Ended sessions share the context's state; overflowing, they make every cookie be opened again.
  const endedSessions = new EndedSessions(context.state, now, () => context.caches.sessions.clear());
  return { ...context, endedSessions };
}

/**
 * Logs each outage of Redis or the control plane once when it begins and once when it ends (not
 * once per request), and counts every failed call in `kp_dependency_errors_total`.
 */
function watchDependencies(monitor: DependencyMonitor, log: Logger, metrics: GatewayMetrics): void {
  monitor.listen({
    down: (dependency, failure) =>
      log.warn(
        { event: 'dependency.down', dependency, kind: failure.kind, detail: failure.detail },
        `${DEPENDENCIES[dependency]} went away; what needs it answers 503 until it is back`,
      ),
    up: (dependency, downMs) =>
      log.warn({ event: 'dependency.up', dependency, downMs }, `${DEPENDENCIES[dependency]} is back`),
    failed: (dependency) => metrics.dependencyErrors.inc({ dependency }),
  });
}

/**
 * `/healthz`, `/readyz` (200 only with a signed config, and with Redis answering when one is
 * configured) and `/metrics`. The control plane is not asked: while it is away the gateway
 * serves what its last signed config and cached keys allow, and taking every replica out of the
 * load balancer at once would refuse that too.
 */
async function ownRoute(ctx: GatewayContext, res: ServerResponse, path: string): Promise<void> {
  if (path === '/healthz') return sendJson(res, 200, { ok: true });
  if (path === '/readyz') {
    const held = ctx.holder.current;
    if (!held) return sendEnvelope(res, fail('gateway_not_configured', 'the gateway has no signed config yet'));
    if (ctx.state.kind === 'redis') {
      const answers = await ctx.state.get('readyz').then(
        () => true,
        () => false,
      );
      if (!answers) return sendEnvelope(res, fail('not_ready', 'not ready: shared state (Redis) is down'));
    }
    return sendJson(res, 200, { ok: true, configVersion: held.version });
  }
  res.writeHead(200, { 'content-type': ctx.metrics.registry.contentType, 'cache-control': 'no-store' });
  res.end(await ctx.metrics.registry.metrics());
}

/** The reserved paths under `/_gate/` (docs/gateway.md#request-pipeline). */
async function gateRoute(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  target: RequestTarget,
  view: ClientView,
): Promise<void> {
  const method = req.method ?? 'GET';
  const query = new URLSearchParams(target.search);
  const notAllowed = () => sendError(ctx.metrics, res, fail('method_not_allowed'));
  switch (target.path) {
    case '/_gate/jwks':
      if (method !== 'GET' && method !== 'HEAD') return notAllowed();
      return sendJson(res, 200, { keys: [ctx.signingKey.publicJwk] }, { 'cache-control': 'public, max-age=300' });
    case '/_gate/auth':
      return forwardAuth(ctx, req, res, view, query.get('redirect') === '1');
    case '/_gate/signin':
      if (method !== 'GET') return notAllowed();
      return signin(ctx, req, res, query);
    case '/_gate/signout':
      if (method !== 'GET' && method !== 'POST') return notAllowed();
      return signout(ctx, req, res, query);
    case '/_gate/callback':
      if (method !== 'GET') return notAllowed();
      return callback(ctx, req, res, query);
    case '/_gate/lang':
      if (method !== 'GET') return notAllowed();
      return chooseLanguage(ctx, res, query);
    default:
      return sendError(ctx.metrics, res, fail('not_found'));
  }
}

/** One proxied request: identity headers stripped, policy applied, then forwarded upstream. */
async function handle(ctx: GatewayContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const ambiguous = checkSingletonFields(req.rawHeaders);
  if (ambiguous) return sendError(ctx.metrics, res, ambiguous, { connection: 'close' });
  // First of all: no identity header from the client survives, in any spelling; then the
  // hop-by-hop ones go, before the gateway sets any header a `Connection` list could name.
  stripIdentityHeaders(req.headers);
  const body = hasBody(req);
  req.headers = endToEnd(req.headers);
  const target = normalizeRequestTarget(req.url);
  if (!target) return sendError(ctx.metrics, res, fail('invalid_path', 'the request path is not acceptable'));
  const method = req.method ?? 'GET';
  if ((method === 'GET' || method === 'HEAD') && OWN_PATHS.has(target.path)) return ownRoute(ctx, res, target.path);
  const view = ctx.applyForwarded(req);
  clientViews.set(req, view);
  if (target.path === '/_gate' || target.path.startsWith('/_gate/')) {
    nameRequestSpan(req, GATE_PATHS.has(target.path) ? target.path : '/_gate/*');
    return gateRoute(ctx, req, res, target, view);
  }
  if (serveProtectedResourceMetadata(ctx, method, target.path, res)) return;

  const result = await authorize(ctx, req, { method, target, res });
  if ('refused' in result) return refuse(ctx, req, res, result.refused);
  const route = result.decision.route;
  if (route) nameRequestSpan(req, route.path);
  let replay: Buffer | null = null;
  if (route?.mcp === true && !MCP_METHODS.has(method))
    // MCP Streamable HTTP (2025-11-25) uses POST, GET and DELETE; no other method may carry a body past the tool rules.
    return sendError(ctx.metrics, res, fail('method_not_allowed', `an MCP route takes ${MCP_ALLOW}`), {
      allow: MCP_ALLOW,
    });
  if (route?.mcp === true && route.tools && body) {
    // docs/gateway.md#mcp-routes: the tool a JSON-RPC request calls decides, and the body read
    // to find it is what the upstream gets, whatever the method.
    const checked = await checkToolCalls(ctx, req, res, route, result.who.caller, enforcedFor(result.decision));
    if (!checked) return;
    replay = checked.body;
  }
  const upstream = ctx.upstreams.find(target.path);
  if (!upstream)
    return sendError(
      ctx.metrics,
      res,
      fail('upstream_unavailable', 'no upstream serves this path (forward-auth only)'),
    );
  const headers = await upstreamHeaders(ctx, req, result.who, upstream.origin, route);
  if (replay) headers['content-length'] = String(replay.length);
  // Counted once the upstream answered: a request that never reached the app was not `allowed` through.
  const forwarded = await forwardTraced(ctx, req, res, upstream.origin, headers, () =>
    upstream.proxy.forward({ req, res, target: `${target.path}${target.search}`, headers, body: replay ?? body }),
  );
  if (forwarded.ok) countPassed(ctx.metrics, result.decision);
  else countUpstreamFailure(ctx.metrics, forwarded.failed);
}

/**
 * The access log line of one request once it ends, in the control plane's shape
 * (docs/gateway.md#logs): credentials in the query redacted, the client address as the trusted
 * forwarded headers give it.
 */
function logAccess(ctx: GatewayContext, req: IncomingMessage, res: ServerResponse, requestId: string): void {
  const started = performance.now();
  const url = redactUrl(req.url ?? '');
  const method = req.method;
  res.once('close', () => {
    ctx.log.info(
      {
        reqId: requestId,
        req: { method, url, remoteAddress: clientViews.get(req)?.clientIp ?? req.socket.remoteAddress },
        res: { statusCode: res.statusCode },
        responseTime: performance.now() - started,
        ...(res.writableFinished ? {} : { aborted: true }),
      },
      'request completed',
    );
  });
}

/** Builds the gateway: request and upgrade handlers over its upstreams, with the policy from the signed config. */
export async function buildGateway(config: ResolvedGatewayConfig, deps: GatewayDeps = {}): Promise<Gateway> {
  const ctx = await buildContext(config, deps);
  const ownsState = !deps.state;
  await ctx.endedSessions.start();
  const startedAt = ctx.now();
  // Tells this process's evidence apart from other replicas' and from its own after a restart.
  const instance = randomToken(12);

  function internalError(error: unknown, answer: () => void): void {
    ctx.log.error({ err: { message: (error as Error)?.message } }, 'gateway request failed');
    ctx.metrics.requests.inc({ outcome: 'internal' });
    answer();
  }

  async function evidence(ttlSeconds = 60): Promise<string> {
    const held = ctx.holder.current;
    const byLabel = async (
      metric: {
        get(): Promise<{ values: Array<{ value: number; labels: Record<string, string | number | undefined> }> }>;
      },
      label: string,
    ) => {
      const out: Record<string, number> = {};
      for (const value of (await metric.get()).values) {
        const key = String(value.labels[label]);
        out[key] = (out[key] ?? 0) + value.value;
      }
      return out;
    };
    const outcomes = await byLabel(ctx.metrics.requests, 'outcome');
    const toolCounts = async () => {
      const out: Record<string, Record<string, number>> = {};
      for (const value of (await ctx.metrics.toolRefusals.get()).values) {
        const byReason = (out[String(value.labels['tool'])] ??= {});
        const reason = String(value.labels['reason']);
        byReason[reason] = (byReason[reason] ?? 0) + value.value;
      }
      return out;
    };
    return buildGatewayEvidence(
      {
        issuer: ctx.publicUrl,
        audience: ctx.controlPlane,
        clientId: config.clientId ?? '',
        config: held ? { version: held.version, hash: held.hash, mode: held.policy.mode } : null,
        counts: {
          allowed: outcomes['allowed'] ?? 0,
          refused: await byLabel(ctx.metrics.refusals, 'reason'),
          observed: await byLabel(ctx.metrics.observed, 'reason'),
          tools: await toolCounts(),
        },
        instance,
        lastEnforcementAt: ctx.enforcement.lastAt,
        startedAt,
        now: ctx.now(),
        ttlSeconds,
      },
      ctx.signingKey,
    );
  }

  return {
    publicUrl: ctx.publicUrl,
    config,
    evidence,
    configHolder: ctx.holder,
    metrics: ctx.metrics,
    signingKey: ctx.signingKey,
    cookieKeys: ctx.cookieKeys,
    state: ctx.state,
    log: ctx.log,
    tracing: ctx.tracing,
    handleRequest(req, res) {
      const requestId = requestIdFor(req.headers['x-request-id'], ctx.trustsPeer(req));
      // Forwarded upstream as it is (the upstream headers copy the request's) and echoed to the caller.
      req.headers['x-request-id'] = requestId;
      res.setHeader('x-request-id', requestId);
      if (ctx.config.accessLog) logAccess(ctx, req, res, requestId);
      const run = () => handle(ctx, req, res);
      (ctx.tracing.enabled ? traceRequest(ctx, req, res, run) : run()).catch((error: unknown) => {
        // Redis or the control plane could not be reached: 503 with Retry-After, never 500.
        if (isDependencyUnavailable(error) && !res.headersSent)
          return sendError(ctx.metrics, res, unavailableFailure(error));
        internalError(error, () => {
          if (!res.headersSent) sendEnvelope(res, fail('internal', 'something went wrong on our side'));
          else res.destroy();
        });
      });
    },
    handleUpgrade(req, socket, head) {
      socket.on('error', () => socket.destroy());
      const run = () => upgrade(ctx, req, socket, head);
      (ctx.tracing.enabled ? traceUpgrade(ctx, req, socket, run) : run()).catch((error: unknown) => {
        if (isDependencyUnavailable(error)) return socket.destroy();
        internalError(error, () => socket.destroy());
      });
    },
    async close(force = false) {
      await ctx.upstreams.close(force);
      await ctx.endedSessions.stop();
      if (ownsState) await ctx.state.close();
      if (!deps.tracing) await ctx.tracing.shutdown();
    },
  };
}

/** Whether an allowed decision would have held against a refusal (observe and canary outside the bucket: no). */
function enforcedFor(decision: Decision): boolean {
  return decision.outcome === 'allow' && decision.enforced;
}
