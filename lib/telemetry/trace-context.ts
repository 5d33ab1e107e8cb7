import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  trace,
  type Context,
  type Link,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const w3c = new W3CTraceContextPropagator();

/** Where a server span of an incoming request starts: its parent context, and the links it carries. */
export interface IncomingTrace {
  parent: Context;
  links: Link[];
}

type Headers = Record<string, string | string[] | undefined>;

/**
 * W3C Trace Context (`traceparent`, `tracestate`) of an incoming request. A trusted proxy's is
 * continued; anyone else's starts a new trace that links to it, so that a caller can neither
 * choose our trace ids nor force sampling, and the trace it claims is still reachable
 * (OpenTelemetry HTTP semantic conventions, "public endpoints").
 */
export function incomingTrace(headers: Headers, fromTrustedPeer: boolean): IncomingTrace {
  if (headers['traceparent'] === undefined) return { parent: ROOT_CONTEXT, links: [] };
  const claimed = trace.getSpanContext(w3c.extract(ROOT_CONTEXT, headers, defaultTextMapGetter));
  if (!claimed || !trace.isSpanContextValid(claimed)) return { parent: ROOT_CONTEXT, links: [] };
  if (fromTrustedPeer) return { parent: trace.setSpanContext(ROOT_CONTEXT, claimed), links: [] };
  return { parent: ROOT_CONTEXT, links: [{ context: claimed }] };
}

/**
 * Sets `traceparent` (and `tracestate`) of an outgoing request to the active span's, replacing
 * whatever the incoming request carried: the next hop continues our trace, never the caller's.
 */
export function injectTraceContext(
  headers: Record<string, string | string[]>,
  active: Context = context.active(),
): void {
  delete headers['traceparent'];
  delete headers['tracestate'];
  w3c.inject(active, headers, defaultTextMapSetter);
}
