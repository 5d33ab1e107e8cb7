import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

interface Tap {
  teardown(fn: () => unknown): void;
}

/** One span as an OTLP/HTTP receiver got it, ids in hex, attribute values as JSON text. */
export interface ReceivedSpan {
  service: string;
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, string>;
  links: Array<{ traceId: string; spanId: string }>;
}

export interface OtlpReceiver {
  /** The base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`); spans arrive at `<url>/v1/traces`. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received, with what they were sent with. */
  requests: Array<{ path: string; type: string }>;
}

type AnyValue = Record<string, unknown> | undefined;
type KeyValue = { key: string; value: AnyValue };

/** OTLP/JSON writes ids as hex (the JavaScript exporter) or, per protobuf's JSON mapping, base64. */
const hexId = (value: unknown): string => {
  if (typeof value !== 'string' || value === '') return '';
  return /^[0-9a-f]+$/i.test(value) && (value.length === 32 || value.length === 16)
    ? value.toLowerCase()
    : Buffer.from(value, 'base64').toString('hex');
};

const text = (value: AnyValue): string => {
  if (!value) return '';
  const [one] = Object.values(value);
  return typeof one === 'string' ? one : JSON.stringify(one);
};

/**
 * A plain OTLP/HTTP receiver on loopback: takes the exporter's POSTs to /v1/traces as OTLP/JSON
 * (what @opentelemetry/exporter-trace-otlp-http sends, gzipped or not) and keeps every span.
 */
export async function startOtlpReceiver(t: Tap): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: OtlpReceiver['requests'] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body = Buffer.concat(chunks);
    const type = String(req.headers['content-type'] ?? '');
    requests.push({ path: req.url ?? '', type });
    if (req.method !== 'POST' || req.url !== '/v1/traces' || !type.includes('json')) {
      res.writeHead(415).end();
      return;
    }
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    const payload = JSON.parse(body.toString('utf8')) as {
      resourceSpans?: Array<{
        resource?: { attributes?: KeyValue[] };
        scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
      }>;
    };
    for (const resourceSpans of payload.resourceSpans ?? []) {
      const service = text(resourceSpans.resource?.attributes?.find((a) => a.key === 'service.name')?.value);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          spans.push({
            service,
            name: String(span['name']),
            kind: Number(span['kind']),
            traceId: hexId(span['traceId']),
            spanId: hexId(span['spanId']),
            parentSpanId: hexId(span['parentSpanId']),
            attributes: Object.fromEntries(
              ((span['attributes'] as KeyValue[]) ?? []).map((a) => [a.key, text(a.value)]),
            ),
            links: ((span['links'] as Array<Record<string, unknown>>) ?? []).map((link) => ({
              traceId: hexId(link['traceId']),
              spanId: hexId(link['spanId']),
            })),
          });
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, requests };
}
