import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { context, SpanKind, SpanStatusCode, trace, type Context, type Link, type Span } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import { incomingTrace, injectTraceContext } from '#lib/telemetry/trace-context.js';
import type { GatewayContext } from './context.js';
import type { ForwardOutcome } from './proxy.js';

/**
 * The gateway's spans (docs/observability.md#traces): one server span per request, named by
 * what decided it (a `/_gate/` endpoint, or the policy route's `path`), and one client span for
 * the hop to the upstream app, whose `traceparent` the app receives. They record methods,
 * route paths, statuses and reasons: never a header, a cookie, a query or a client address.
 */

/** Probes and scrapes: no traces. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

const requestSpans = new WeakMap<IncomingMessage, Span>();
/** The links of a request's server span: an untrusted caller's `traceparent`, which the hop carries too. */
const requestLinks = new WeakMap<IncomingMessage, Link[]>();

/**
 * Runs `handle` inside the request's server span. A `traceparent` is continued only from a
 * trusted proxy; anyone else's starts a new trace with a link to it.
 */
export function traceRequest(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  handle: () => Promise<void>,
): Promise<void> {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  if (UNTRACED_PATHS.has(query === -1 ? url : url.slice(0, query))) return handle();
  const { span, active } = startServerSpan(ctx, req);
  res.once('close', () => {
    if (res.writableFinished) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.statusCode);
    else span.setAttribute(ATTR_ERROR_TYPE, 'aborted');
    if (!res.writableFinished || res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  return context.with(active, handle);
}

/**
 * Runs an upgrade (`upgrades.ts`) inside its server span, which ends with the socket; the
 * upstream's `traceparent` is set by `upgrade` from the active span.
 */
export function traceUpgrade(ctx: GatewayContext, req: IncomingMessage, socket: Duplex, handle: () => Promise<void>) {
  const { span, active } = startServerSpan(ctx, req);
  socket.once('close', () => span.end());
  return context.with(active, handle);
}

function startServerSpan(ctx: GatewayContext, req: IncomingMessage): { span: Span; active: Context } {
  const method = req.method ?? 'GET';
  const incoming = incomingTrace(req.headers, ctx.trustsPeer(req));
  const span = ctx.tracing.tracer.startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      links: incoming.links,
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        [ATTR_URL_SCHEME]: ctx.secure ? 'https' : 'http',
        'keyplane.request_id': String(req.headers['x-request-id'] ?? ''),
      },
    },
    incoming.parent,
  );
  requestSpans.set(req, span);
  requestLinks.set(req, incoming.links);
  return { span, active: trace.setSpan(incoming.parent, span) };
}

/** Names the request's span by its route template: a `/_gate/` endpoint or a policy route's path prefix. */
export function nameRequestSpan(req: IncomingMessage, route: string): void {
  const span = requestSpans.get(req);
  if (!span) return;
  span.updateName(`${req.method ?? 'GET'} ${route}`);
  span.setAttribute(ATTR_HTTP_ROUTE, route);
}

/**
 * The hop to the upstream app as a client span; `headers` (those the app will get) carry its
 * `traceparent` in place of whatever the caller sent. Tracing off, the hop is `forward()` alone.
 */
export async function forwardTraced(
  ctx: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  origin: string,
  headers: Record<string, string | string[]>,
  forward: () => Promise<ForwardOutcome>,
): Promise<ForwardOutcome> {
  if (!ctx.tracing.enabled) return forward();
  const method = req.method ?? 'GET';
  const upstream = new URL(origin);
  return ctx.tracing.tracer.startActiveSpan(
    method,
    {
      kind: SpanKind.CLIENT,
      // The span the app sees as its parent links to what an untrusted caller claimed, as the request's does.
      links: requestLinks.get(req) ?? [],
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: method,
        [ATTR_SERVER_ADDRESS]: upstream.hostname,
        [ATTR_SERVER_PORT]: Number(upstream.port || (upstream.protocol === 'https:' ? 443 : 80)),
      },
    },
    async (span) => {
      injectTraceContext(headers);
      const outcome = await forward();
      if (outcome.ok) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, res.statusCode);
      else span.setAttribute(ATTR_ERROR_TYPE, outcome.failed);
      if (!outcome.ok || res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      return outcome;
    },
  );
}
