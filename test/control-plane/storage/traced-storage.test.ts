import { ROOT_CONTEXT, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '#lib/telemetry/tracing.js';
import { traceStorage } from '../../../control-plane/src/storage/traced-storage.js';
import type { Storage } from '../../../control-plane/src/storage/interface.js';
import { onEveryBackend } from '../../helpers/storage-backends.js';
import { identity } from './fixtures/accounts.js';

interface Tap {
  test(name: string, fn: (t: Tap) => Promise<void>): Promise<void> | unknown;
  equal(a: unknown, b: unknown, m?: string): void;
  same(a: unknown, b: unknown, m?: string): void;
  ok(a: unknown, m?: string): void;
}

onEveryBackend(((t: Tap, open: () => Promise<Storage>) => {
  t.test(
    'each storage call is a span named by its store and method, inside transactions too, with no SQL or parameter',
    async (t) => {
      const exporter = new InMemorySpanExporter();
      const tracing = startTracing(
        { otlp: {}, service_name: 'test', sample_ratio: 1 },
        { processor: new SimpleSpanProcessor(exporter) },
      );
      const raw = await open();
      const storage = traceStorage(raw, tracing.tracer, 'sqlite');
      const secretName = 'secret-ada';

      await storage.identities.findByUsername('outside-any-span');
      t.equal(exporter.getFinishedSpans().length, 0, 'a call outside any span records nothing');

      const request = tracing.tracer.startSpan('GET /test');
      await context.with(trace.setSpan(ROOT_CONTEXT, request), async () => {
        await storage.identities.create(identity('usr_traced', secretName));
        await storage.transaction(async (tx) => {
          await tx.identities.findByUsername(secretName);
        });
        t.equal((await storage.identities.findByUsername(secretName))?.identityId, 'usr_traced', 'answers unchanged');
      });
      request.end();

      const spans = exporter.getFinishedSpans();
      t.same(
        spans.map((s) => s.name),
        ['identities.create', 'identities.findByUsername', 'transaction', 'identities.findByUsername', 'GET /test'],
      );
      const requestId = request.spanContext().spanId;
      const transaction = spans.find((s) => s.name === 'transaction')!;
      t.equal(spans[0]!.parentSpanContext?.spanId, requestId, 'a child of the span that made the call');
      t.equal(
        spans[1]!.parentSpanContext?.spanId,
        transaction.spanContext().spanId,
        'calls in a transaction are its children',
      );
      t.same(spans[0]!.attributes, { 'db.system.name': 'sqlite', 'db.operation.name': 'identities.create' });
      t.ok(
        spans.every((s) => !JSON.stringify(s.attributes).includes(secretName)),
        'no parameter is recorded',
      );
      await tracing.shutdown();
    },
  );
}) as never);
