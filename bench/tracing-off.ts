/**
 * tracing-off — what OpenTelemetry costs when `telemetry` is not configured, in one process
 * (docs/observability.md#what-tracing-costs). Off, Keyplane installs no hook, leaves storage
 * unwrapped and passes no tracer to its fetchers, so the request path pays one branch. For
 * comparison it also times the API's no-op tracer (what a span would cost if instrumented code
 * called the API anyway), and one control-plane request (`app.inject` of discovery) with
 * tracing off and on (spans batched to an exporter that drops them), in CPU time per request.
 *
 * Run: `npx tsx bench/tracing-off.ts` (BENCH_ITERATIONS, default 1000000; BENCH_REQUESTS, default 2000).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { loadControlPlaneConfig } from '#config/load.js';
import type { ControlPlaneConfig } from '#config/types.js';
import { startTracing, TRACING_OFF, type Tracing } from '#lib/telemetry/tracing.js';
import { buildControlPlane } from '../control-plane/src/app.js';
import { openControlPlaneServices } from '../control-plane/src/services.js';

const ITERATIONS = Number(process.env['BENCH_ITERATIONS'] ?? 1_000_000);
const REQUESTS = Number(process.env['BENCH_REQUESTS'] ?? 2000);

let sink = 0;
const work = (i: number): number => (sink = (sink + i) | 0);

function nsPerOp(run: (i: number) => void): number {
  for (let i = 0; i < ITERATIONS / 10; i++) run(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < ITERATIONS; i++) run(i);
  return Number(process.hrtime.bigint() - start) / ITERATIONS;
}

const tracing: Tracing = TRACING_OFF;
const plain = nsPerOp(work);
const branch = nsPerOp((i) => (tracing.enabled ? tracing.tracer.startActiveSpan('x', () => work(i)) : work(i)));
const noop = nsPerOp((i) =>
  tracing.tracer.startActiveSpan('x', (span) => {
    work(i);
    span.end();
  }),
);
console.log(`plain call                      ${plain.toFixed(1)} ns`);
console.log(`off, as Keyplane does it        ${branch.toFixed(1)} ns  (+${(branch - plain).toFixed(1)} ns)`);
console.log(`the API's no-op span instead    ${noop.toFixed(1)} ns  (+${(noop - plain).toFixed(1)} ns)`);

/** An exporter that drops what it gets: the cost measured is making spans, not sending them. */
const dropping: SpanExporter = {
  export: (_spans: ReadableSpan[], done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};

async function requestMicros(on: boolean): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kp-bench-tracing-'));
  const config = loadControlPlaneConfig({
    env: {},
    overrides: {
      dataDir,
      issuer: 'http://localhost:4400',
      masterKey: 'bench-master-key-0123456789abcdef01234567',
      logLevel: 'silent',
    },
  }) as ControlPlaneConfig & { issuer: string };
  const traced = on ? startTracing(config.telemetry, { processor: new BatchSpanProcessor(dropping) }) : undefined;
  const services = await openControlPlaneServices(config, traced ? { tracing: traced } : {});
  const app = await buildControlPlane(services, { areas: ['discovery'] });
  await app.ready();
  const once = () => app.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
  for (let i = 0; i < REQUESTS / 4; i++) await once();
  // CPU time, not wall time: on a shared machine the wall clock follows the other load.
  const start = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) await once();
  const used = process.cpuUsage(start);
  const micros = (used.user + used.system) / REQUESTS;
  await app.close();
  await services.close();
  await traced?.shutdown();
  rmSync(dataDir, { recursive: true, force: true });
  return micros;
}

const off = await requestMicros(false);
const on = await requestMicros(true);
console.log(`discovery request, tracing off  ${off.toFixed(1)} µs of CPU`);
console.log(`discovery request, tracing on   ${on.toFixed(1)} µs of CPU  (+${(on - off).toFixed(1)} µs)`);
if (sink === 42) console.log('');
