import { context, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { ATTR_DB_OPERATION_NAME, ATTR_DB_SYSTEM_NAME, ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import type { Storage, Stores } from './interface.js';

/** The `Storage` methods that hand their work a transaction's stores: the calls inside get spans too. */
const WITH_TX = new Set<PropertyKey>(['transaction', 'redeemCode', 'rotateRefreshToken']);
/** Not a storage call: closing is not work anyone waits on in a trace. */
const UNTRACED = new Set<PropertyKey>(['close', 'then']);

/**
 * Storage whose every call is a span `<store>.<method>` (`identities.findByUsername`), a child of
 * the span that made it. A span records the operation and the database system only, never the
 * SQL text or its parameters (which hold usernames, token hashes, e-mail addresses). A call made
 * outside any span (the sealer's tick, key reloads) records nothing: a trace is about a request
 * or a job, and a root span per timer tick would drown them.
 */
export function traceStorage(storage: Storage, tracer: Tracer, system: 'sqlite' | 'postgresql'): Storage {
  const stores = new WeakMap<object, object>();
  const call = <T>(name: string, run: () => T): T => {
    if (!trace.getSpan(context.active())) return run();
    return tracer.startActiveSpan(
      name,
      { kind: SpanKind.CLIENT, attributes: { [ATTR_DB_SYSTEM_NAME]: system, [ATTR_DB_OPERATION_NAME]: name } },
      (span) => settle(span, run),
    );
  };
  const traceStores = <S extends object>(target: S, prefix: string): S =>
    new Proxy(target, {
      get(object, property, receiver) {
        const value: unknown = Reflect.get(object, property, receiver);
        if (typeof property === 'symbol' || UNTRACED.has(property)) return value;
        if (typeof value === 'function') {
          const name = prefix ? `${prefix}.${property}` : property;
          const fn = value as (...args: unknown[]) => unknown;
          return (...args: unknown[]) =>
            call(name, () => fn.apply(object, WITH_TX.has(property) && !prefix ? args.map(withTracedTx) : args));
        }
        // A store (`storage.identities`): its methods become spans named after it.
        if (value && typeof value === 'object' && !prefix) {
          let traced = stores.get(value);
          if (!traced) stores.set(value, (traced = traceStores(value, property)));
          return traced;
        }
        return value;
      },
    });
  const withTracedTx = (arg: unknown): unknown =>
    typeof arg === 'function'
      ? (tx: Stores, ...rest: unknown[]) => (arg as (...a: unknown[]) => unknown)(traceStores(tx, ''), ...rest)
      : arg;
  return traceStores(storage, '');
}

function settle<T>(span: Span, run: () => T): T {
  let result: T;
  try {
    result = run();
  } catch (error) {
    fail(span, error);
    throw error;
  }
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        fail(span, error);
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

/** The error's kind only: a driver's message may quote the statement's values. */
function fail(span: Span, error: unknown): void {
  span.setAttribute(
    ATTR_ERROR_TYPE,
    (error as { code?: unknown }).code ? String((error as { code: unknown }).code) : 'error',
  );
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
