import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { stripIdentityHeaders } from '#lib/gateway-protocol/identity-headers.js';
import { checkSingletonFields } from '#lib/gateway-protocol/request-head.js';
import { normalizeRequestTarget } from '#lib/gateway-protocol/request-path.js';
import { authorize } from './authorize.js';
import type { GatewayContext } from './context.js';
import { endToEnd } from './proxy.js';
import { countPassed, sendError } from './respond.js';
import { upstreamHeaders } from './identity.js';
import { injectTraceContext } from '#lib/telemetry/trace-context.js';
import { nameRequestSpan } from './tracing.js';

/** A WebSocket (or other) upgrade: the same identification and policy as a request, then a spliced socket. */
export async function upgrade(ctx: GatewayContext, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  const ambiguous = checkSingletonFields(req.rawHeaders);
  if (ambiguous) return sendError(ctx.metrics, socket, ambiguous);
  stripIdentityHeaders(req.headers);
  const upgradeTo = req.headers['upgrade'];
  req.headers = endToEnd(req.headers);
  const refuse = (error: KeyplaneError) => sendError(ctx.metrics, socket, error);
  const target = normalizeRequestTarget(req.url);
  if (!target) return refuse(fail('invalid_path'));
  ctx.applyForwarded(req);
  const result = await authorize(ctx, req, { method: req.method ?? 'GET', target });
  if ('refused' in result) {
    const refused = result.refused;
    if (refused.signIn !== undefined) return refuse(fail('unauthorized', 'sign in first'));
    // A refresh that is due but could not be done now: the socket would outlive what the session may prove.
    // (A control plane or Redis that cannot be reached answers its own 503 `unavailable`.)
    if (refused.error.reason === 'session_refresh_pending')
      return refuse(fail('unauthorized', 'the session is due for a refresh that could not be done; reconnect'));
    return refuse(refused.error);
  }
  if (result.decision.route) nameRequestSpan(req, result.decision.route.path);
  const upstream = ctx.upstreams.find(target.path);
  if (!upstream) return refuse(fail('upstream_unavailable', 'no upstream serves this path (forward-auth only)'));
  const headers = await upstreamHeaders(ctx, req, result.who, upstream.origin);
  if (ctx.tracing.enabled) injectTraceContext(headers);
  headers['connection'] = 'Upgrade';
  if (upgradeTo) headers['upgrade'] = upgradeTo;
  req.headers = headers as IncomingMessage['headers'];
  req.url = `${target.path}${target.search}`;
  countPassed(ctx.metrics, result.decision);
  upstream.proxy.upgrade(req, socket, head);
}
