import { context, ProxyTracerProvider, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** The `telemetry` section both services' configs share (config/schema.ts). */
export interface TelemetrySettings {
  otlp: { endpoint?: string; headers?: Readonly<Record<string, string>> };
  service_name: string;
  sample_ratio: number;
}

/**
 * One service's traces: its own tracer provider, never the process-wide one, so that the control
 * plane and the gateway in one process (`keyplane up`, tests) each export under their own
 * `service.name`. Off, `tracer` is the OpenTelemetry API's no-op and nothing else exists.
 */
export interface Tracing {
  readonly enabled: boolean;
  readonly tracer: Tracer;
  /** Exports what is buffered (tests, shutdown). */
  flush(): Promise<void>;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Tracing off: the API's no-op tracer, from a provider nobody can register a delegate on. */
export const TRACING_OFF: Tracing = Object.freeze({
  enabled: false,
  tracer: new ProxyTracerProvider().getTracer('keyplane'),
  flush: () => Promise.resolve(),
  shutdown: () => Promise.resolve(),
});

/** OTLP/HTTP's traces path under the base endpoint (OpenTelemetry exporter spec: `OTEL_EXPORTER_OTLP_ENDPOINT`). */
export function tracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

export interface StartTracingOptions {
  /** Spans go here instead of an OTLP exporter (tests of what a span records). */
  processor?: SpanProcessor;
}

/**
 * Starts tracing when `telemetry.otlp.endpoint` is set (by config or `OTEL_EXPORTER_OTLP_ENDPOINT`),
 * otherwise answers `TRACING_OFF`. Spans are batched and sent as OTLP/HTTP (JSON) to
 * `<endpoint>/v1/traces`; a trace is kept with probability `sample_ratio`, or as its trusted
 * parent decided.
 */
export function startTracing(settings: TelemetrySettings, options: StartTracingOptions = {}): Tracing {
  const endpoint = settings.otlp.endpoint;
  if (!endpoint && !options.processor) return TRACING_OFF;
  useAsyncContext();
  const processor =
    options.processor ??
    new BatchSpanProcessor(
      new OTLPTraceExporter({ url: tracesUrl(endpoint!), headers: { ...(settings.otlp.headers ?? {}) } }),
    );
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.service_name }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sample_ratio) }),
    spanProcessors: [processor],
  });
  return {
    enabled: true,
    tracer: provider.getTracer('keyplane'),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

let asyncContext = false;

/**
 * The active span follows a request through its awaits (AsyncLocalStorage). Process-wide, as the
 * API's context manager is; set once, by the first service that turns tracing on.
 */
function useAsyncContext(): void {
  if (asyncContext) return;
  asyncContext = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}
