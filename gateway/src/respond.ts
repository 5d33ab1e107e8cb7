import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { KeyplaneError } from '#lib/errors/keyplane-error.js';
import type { Reason } from '#lib/errors/reasons.js';
import type { Decision } from '#lib/gateway-protocol/policy.js';
import type { GatewayMetrics } from './metrics.js';

type Headers = Record<string, string | string[]>;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Headers = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

export function countRefusal(metrics: GatewayMetrics, reason: Reason): void {
  metrics.refusals.inc({ reason });
  metrics.requests.inc({ outcome: 'refused' });
}

/** A request let through: `observed` when the policy would have refused it (observe, canary). */
export function countPassed(metrics: GatewayMetrics, decision: Decision): void {
  metrics.requests.inc({ outcome: decision.outcome === 'allow' && decision.wouldRefuse ? 'observed' : 'allowed' });
}

/** A request the policy let through that the upstream failed (502/503/504): neither allowed through nor refused by policy. */
export function countUpstreamFailure(metrics: GatewayMetrics, reason: Reason): void {
  metrics.upstreamFailures.inc({ reason });
  metrics.requests.inc({ outcome: 'upstream_failed' });
}

/**
 * The one writer of the gateway's `{ok: false, reason, message}` envelope, uncounted (the gateway's
 * own endpoints, internal errors, an upstream that failed): with the failure's own headers
 * (Retry-After of a 503, WWW-Authenticate of a 401). The target is a response, or the socket of
 * an upgrade that is refused before any response exists (then the connection closes).
 */
export function sendEnvelope(target: ServerResponse | Duplex, error: KeyplaneError, extraHeaders: Headers = {}): void {
  const headers = { ...error.headers, ...extraHeaders };
  if ('writeHead' in target) return sendJson(target, error.status, error.toEnvelope(), headers);
  const body = JSON.stringify(error.toEnvelope());
  const lines = Object.entries({
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
    connection: 'close',
  }).flatMap(([name, value]) => [value].flat().map((one) => `${name}: ${one}\r\n`));
  target.end(`HTTP/1.1 ${error.status} ${error.reason}\r\n${lines.join('')}\r\n${body}`);
}

/** The envelope of a refusal, counted under its reason. */
export function sendError(
  metrics: GatewayMetrics,
  res: ServerResponse | Duplex,
  error: KeyplaneError,
  extraHeaders: Headers = {},
): void {
  countRefusal(metrics, error.reason);
  sendEnvelope(res, error, extraHeaders);
}

export function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  // Cookies set earlier on this response (a refresh that ended the session) go out too.
  const earlier = res.getHeader('set-cookie');
  const all = [...[earlier ?? []].flat().map(String), ...cookies];
  res.writeHead(302, { location, 'cache-control': 'no-store', ...(all.length > 0 ? { 'set-cookie': all } : {}) });
  res.end();
}
