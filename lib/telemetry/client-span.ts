import { SpanKind, SpanStatusCode, type Attributes, type Tracer } from '@opentelemetry/api';
import { ATTR_ERROR_TYPE, ATTR_HTTP_RESPONSE_STATUS_CODE } from '@opentelemetry/semantic-conventions';
import { injectTraceContext } from './trace-context.js';

/**
 * One call to a service of ours (the gateway's calls to the control plane) as a client span
 * whose `traceparent` goes with the request, so the callee's server span is its child. `work`
 * gets the headers to add and answers the response status. Without a tracer (tracing off) it is
 * `work({})`, nothing more.
 */
export async function callTraced(
  tracer: Tracer | undefined,
  name: string,
  attributes: Attributes,
  work: (traceHeaders: Record<string, string>) => Promise<number>,
): Promise<number> {
  if (!tracer) return work({});
  return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const headers: Record<string, string> = {};
    injectTraceContext(headers);
    try {
      const status = await work(headers);
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      return status;
    } catch (error) {
      span.setAttribute(ATTR_ERROR_TYPE, (error as { code?: string }).code ?? 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}
