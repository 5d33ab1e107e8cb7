import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';
import type { GatewayConfig } from '#config/types.js';
import type { DpopKeyCache } from '#lib/dpop/key-cache.js';
import { applyForwardedHeaders, type ClientView } from '#lib/gateway-protocol/forwarded.js';
import type { Caller } from '#lib/gateway-protocol/policy.js';
import type { CookieKey, GateSession } from '#lib/gateway-protocol/session-cookie.js';
import type { GatewayConfigHolder } from '#lib/gateway-protocol/signed-config.js';
import type { DependencyMonitor } from '#lib/runtime/dependency-monitor.js';
import type { SharedState } from '#lib/runtime/shared-state/index.js';
import { compileAddressList } from '#lib/net/cidr.js';
import type { ExpiringCache } from '#lib/runtime/expiring-cache.js';
import type { VerifiedAccessToken } from './bearer.js';
import type { EndedSessions } from './ended-sessions.js';
import type { GatewaySigningKey } from './keys.js';
import type { GatewayMetrics } from './metrics.js';
import type { TokenClient } from './token-client.js';
import type { UpstreamRoutes } from './upstreams.js';
import type { Tracing } from '#lib/telemetry/tracing.js';

/** A gateway config whose public URL is known (startGateway fills it in after binding). */
export type ResolvedGatewayConfig = GatewayConfig & { publicUrl: string };

/**
 * Everything one gateway instance holds, built once by `buildGateway` and handed to each
 * concern (sessions, refresh, page flow, forward auth, upgrades) as their only dependency.
 */
export interface GatewayContext {
  config: ResolvedGatewayConfig;
  /** The public URL without a trailing slash. */
  publicUrl: string;
  /** The control plane's issuer without a trailing slash. */
  controlPlane: string;
  /** Cookies are `__Host-` and Secure on https. */
  secure: boolean;
  redirectUri: string;
  now: () => number;
  log: Logger;
  metrics: GatewayMetrics;
  state: SharedState;
  /** Whether Redis and the control plane answer: outages logged once, counted in `kp_dependency_errors_total`. */
  dependencies: DependencyMonitor;
  /** The control plane's signing keys. */
  keys: JWTVerifyGetKey;
  cookieKeys: readonly CookieKey[];
  signingKey: GatewaySigningKey;
  dpopNonceKeys?: readonly Uint8Array[];
  holder: GatewayConfigHolder;
  /** Absent without client credentials: no code exchange, no refresh. */
  tokens?: TokenClient;
  upstreams: UpstreamRoutes;
  caches: {
    /** Opened session cookies by the exact Cookie header. */
    sessions: ExpiringCache<string, GateSession>;
    verifiedTokens: ExpiringCache<string, VerifiedAccessToken>;
    /** Exchanged access tokens' answers from the control plane's introspection (active for a few seconds, revoked for good). */
    exchangedTokens: ExpiringCache<string, boolean>;
    dpopKeys: DpopKeyCache;
    /** Upstream assertions by identity and audience. */
    assertions: ExpiringCache<string, string>;
  };
  /** Sessions replaced by a sign-in or step-up, or signed out, whose cookies are refused (docs/gateway.md#session-rotation). */
  endedSessions: EndedSessions;
  /** OpenTelemetry traces (docs/observability.md#traces); `TRACING_OFF` unless configured. */
  tracing: Tracing;
  /** When a decision last held against a refusal (evidence reports it). */
  enforcement: { lastAt: number | null };
  /** Forwarded headers kept only from a trusted peer (docs/architecture.md#decisions: a client could forge them), and what they say about the client. */
  applyForwarded(req: IncomingMessage): ClientView;
  /** Whether the connection comes from a trusted proxy, without touching the headers. */
  trustsPeer(req: IncomingMessage): boolean;
}

/** Who is asking, as identification established it. */
export interface Identified {
  caller: Caller | null;
  session: GateSession | null;
  /** The caller sent Bearer or DPoP: never redirected. */
  api: boolean;
}

/** `applyForwarded` with one trust look-up per connection, not per request: a keep-alive socket keeps its peer. */
/** Whether a request's connection comes from a trusted proxy, looked up once per connection: a keep-alive socket keeps its peer. */
export function createPeerTrust(trustedProxies: readonly string[]): (req: IncomingMessage) => boolean {
  const trustedList = compileAddressList(trustedProxies);
  const trustBySocket = new WeakMap<object, boolean>();
  return (req) => {
    let trusted = trustBySocket.get(req.socket);
    if (trusted === undefined) {
      trusted = trustedList(req.socket.remoteAddress ?? '');
      trustBySocket.set(req.socket, trusted);
    }
    return trusted;
  };
}

export function createForwardedReader(
  trustedProxies: readonly string[],
  publicUrl: string,
): (req: IncomingMessage) => ClientView {
  const trustsPeer = createPeerTrust(trustedProxies);
  return (req) =>
    applyForwardedHeaders(
      req.headers,
      { remoteAddress: req.socket.remoteAddress ?? '', encrypted: Boolean((req.socket as TLSSocket).encrypted) },
      () => trustsPeer(req),
      publicUrl,
    );
}
