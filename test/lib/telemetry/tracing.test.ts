import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { fetchGuarded } from '#lib/fetch/guarded-fetch.js';
import { incomingTrace, injectTraceContext } from '#lib/telemetry/trace-context.js';
import { startTracing, TRACING_OFF, tracesUrl } from '#lib/telemetry/tracing.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const traceparent = `00-${TRACE}-${PARENT}-01`;

function recording() {
  const exporter = new InMemorySpanExporter();
  const tracing = startTracing(
    { otlp: {}, service_name: 'test', sample_ratio: 1 },
    { processor: new SimpleSpanProcessor(exporter) },
  );
  t.teardown(() => tracing.shutdown());
  return { exporter, tracing };
}

t.test('tracing is off without an endpoint: the no-op tracer, nothing else', async (t) => {
  const off = startTracing({ otlp: {}, service_name: 'keyplane-gateway', sample_ratio: 1 });
  t.equal(off, TRACING_OFF);
  t.notOk(off.enabled);
  const span = off.tracer.startSpan('nothing');
  t.notOk(span.isRecording(), 'its spans record nothing');
  t.notOk(trace.isSpanContextValid(span.spanContext()), 'and carry no trace id');
  span.end();
  t.equal(tracesUrl('http://collector:4318/'), 'http://collector:4318/v1/traces');
});

t.test("a trusted peer's traceparent is continued; anyone else's becomes a link of a new trace", async (t) => {
  const trusted = incomingTrace({ traceparent }, true);
  t.equal(trace.getSpanContext(trusted.parent)?.traceId, TRACE);
  t.equal(trace.getSpanContext(trusted.parent)?.spanId, PARENT);
  t.same(trusted.links, []);

  const untrusted = incomingTrace({ traceparent, tracestate: 'vendor=x' }, false);
  t.equal(untrusted.parent, ROOT_CONTEXT, 'no parent: a new trace');
  t.equal(untrusted.links[0]?.context.traceId, TRACE, 'linked to the claimed one');

  for (const bad of ['00-00000000000000000000000000000000-b7ad6b7169203331-01', 'garbage', '00-xyz']) {
    const parsed = incomingTrace({ traceparent: bad }, true);
    t.equal(parsed.parent, ROOT_CONTEXT, `${bad} starts a new trace`);
    t.same(parsed.links, []);
  }
  t.same(incomingTrace({}, true), { parent: ROOT_CONTEXT, links: [] });
});

t.test("an outgoing request carries the active span's traceparent in place of the caller's", async (t) => {
  const { tracing } = recording();
  const span = tracing.tracer.startSpan('hop');
  const headers: Record<string, string | string[]> = { traceparent, tracestate: 'caller=1', accept: '*/*' };
  injectTraceContext(headers, trace.setSpan(ROOT_CONTEXT, span));
  t.equal(headers['traceparent'], `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  t.notOk('tracestate' in headers, "the caller's tracestate is not passed on");
  const none: Record<string, string | string[]> = { traceparent };
  injectTraceContext(none, ROOT_CONTEXT);
  t.same(none, {}, 'without a span, nothing is passed on');
  span.end();
});

t.test('a guarded fetch is a client span with the host and status, never the path, query or a header', async (t) => {
  const { exporter, tracing } = recording();
  let gotTraceparent: string | undefined;
  const server = createServer((req, res) => {
    gotTraceparent = req.headers['traceparent'] as string | undefined;
    res.writeHead(req.url?.startsWith('/missing') ? 404 : 200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const options = { allowHttp: true, allowPrivateTargets: true, tracer: tracing.tracer };

  const parent = tracing.tracer.startSpan('job');
  await context.with(trace.setSpan(ROOT_CONTEXT, parent), async () => {
    t.equal((await fetchGuarded(`${origin}/jwks/secret-path?token=secret-query`, options)).status, 200);
    t.equal((await fetchGuarded(`${origin}/missing`, options)).status, 404);
    await fetchGuarded('https://user:secret-password@example.com/', options).catch(() => undefined);
  });
  parent.end();
  t.equal(gotTraceparent, undefined, 'no traceparent goes to a URL a user named');

  const [ok, missing, refused] = exporter.getFinishedSpans();
  t.equal(ok?.name, 'GET');
  t.equal(ok?.parentSpanContext?.spanId, parent.spanContext().spanId);
  t.same(ok?.attributes, {
    'http.request.method': 'GET',
    'url.scheme': 'http',
    'server.address': '127.0.0.1',
    'server.port': Number(new URL(origin).port),
    'http.response.status_code': 200,
  });
  t.equal(missing?.attributes['http.response.status_code'], 404);
  t.equal(missing?.status.code, 2, 'a 4xx answer is an error of the fetch');
  t.equal(refused?.attributes['error.type'], 'fetch_credentials_in_url', 'a refusal records its reason');
  t.notMatch(JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes)), /secret/);
});
