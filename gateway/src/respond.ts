import type { ServerResponse } from 'node:http';
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

/** The envelope of a failure, uncounted (the gateway's own endpoints and internal errors). */
export function sendEnvelope(res: ServerResponse, error: KeyplaneError): void {
  sendJson(res, error.status, error.toEnvelope(), error.headers);
}

/** The envelope of a refusal, counted under its reason. */
export function sendError(
  metrics: GatewayMetrics,
  res: ServerResponse,
  error: KeyplaneError,
  extraHeaders: Headers = {},
): void {
  countRefusal(metrics, error.reason);
  sendJson(res, error.status, error.toEnvelope(), { ...error.headers, ...extraHeaders });
}

export function redirect(res: ServerResponse, location: string, cookies: string[] = []): void {
  // Cookies set earlier on this response (a refresh that ended the session) go out too.
  const earlier = res.getHeader('set-cookie');
  const all = [...[earlier ?? []].flat().map(String), ...cookies];
  res.writeHead(302, { location, 'cache-control': 'no-store', ...(all.length > 0 ? { 'set-cookie': all } : {}) });
  res.end();
}
