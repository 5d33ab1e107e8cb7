import { EventEmitter } from 'node:events';
import { MemorySharedState } from './memory.js';
import type { SharedState } from './types.js';

/**
 * One end of a process's IPC channel: a cluster worker's `process`, the primary's `Worker`, or a
 * forked `ChildProcess`. Messages are structured-cloned by Node.js.
 */
export interface IpcEndpoint {
  /** The callback hears of a channel already closed (otherwise an 'error' event nobody listens to). */
  send(message: unknown, callback: (error: Error | null) => void): unknown;
  readonly connected?: boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

type Operation = 'incrWithTtl' | 'setIfAbsent' | 'set' | 'get' | 'take' | 'del' | 'publish';
const OPERATIONS = new Set<string>(['incrWithTtl', 'setIfAbsent', 'set', 'get', 'take', 'del', 'publish']);

/** Worker → primary: one operation on the primary's state. */
interface StateCall {
  kp: 'state.call';
  id: number;
  op: Operation;
  args: Array<string | number>;
}
/** Primary → worker: the answer to one call. */
interface StateAnswer {
  kp: 'state.answer';
  id: number;
  value?: unknown;
  error?: string;
}
/** Primary → every worker: a message published on a channel (by any process of the instance). */
interface StateMessage {
  kp: 'state.message';
  channel: string;
  message: string;
}

const isMessage = <T extends { kp: string }>(value: unknown, kp: T['kp']): value is T =>
  typeof value === 'object' && value !== null && (value as { kp?: unknown }).kp === kp;

/**
 * How long a worker waits for the primary before the operation fails: the primary answers from
 * memory at once, so only a primary that is gone (or stuck) takes this long.
 */
const CALL_TIMEOUT_MS = 5_000;

/**
 * The primary's side (docs/scaling.md#workers): the instance's one in-process state, used by the
 * primary's own services and served to every worker over IPC, so a one-time value taken by one
 * worker is gone for all of them (each operation runs whole in the primary's one thread, which is
 * what makes `take` and `setIfAbsent` atomic across workers). Publishes reach every process.
 */
export class SharedStateHub implements SharedState {
  readonly kind = 'memory' as const;
  readonly #state: MemorySharedState;
  readonly #endpoints = new Map<IpcEndpoint, (message: unknown) => void>();

  constructor(now: () => number = Date.now) {
    this.#state = new MemorySharedState(now);
  }

  /** Serves `endpoint` (a worker) until `detach`. */
  attach(endpoint: IpcEndpoint): void {
    const listener = (message: unknown) => {
      if (isMessage<StateCall>(message, 'state.call')) void this.#answer(endpoint, message);
    };
    this.#endpoints.set(endpoint, listener);
    endpoint.on('message', listener);
  }

  detach(endpoint: IpcEndpoint): void {
    const listener = this.#endpoints.get(endpoint);
    if (listener) endpoint.off('message', listener);
    this.#endpoints.delete(endpoint);
  }

  async #answer(endpoint: IpcEndpoint, call: StateCall): Promise<void> {
    let answer: StateAnswer;
    try {
      if (!OPERATIONS.has(call.op) || !Array.isArray(call.args)) throw new Error(`unknown operation ${call.op}`);
      const run = this[call.op] as (...args: Array<string | number>) => Promise<unknown>;
      answer = { kp: 'state.answer', id: call.id, value: await run.apply(this, call.args) };
    } catch (error) {
      answer = { kp: 'state.answer', id: call.id, error: (error as Error).message };
    }
    sendQuietly(endpoint, answer);
  }

  incrWithTtl(key: string, ttlMs: number) {
    return this.#state.incrWithTtl(key, ttlMs);
  }
  setIfAbsent(key: string, value: string, ttlMs: number) {
    return this.#state.setIfAbsent(key, value, ttlMs);
  }
  set(key: string, value: string, ttlMs: number) {
    return this.#state.set(key, value, ttlMs);
  }
  get(key: string) {
    return this.#state.get(key);
  }
  take(key: string) {
    return this.#state.take(key);
  }
  del(key: string) {
    return this.#state.del(key);
  }

  async publish(channel: string, message: string): Promise<void> {
    const broadcast: StateMessage = { kp: 'state.message', channel, message };
    for (const endpoint of this.#endpoints.keys()) sendQuietly(endpoint, broadcast);
    await this.#state.publish(channel, message);
  }

  subscribe(channel: string, handler: (message: string) => void) {
    return this.#state.subscribe(channel, handler);
  }

  async close(): Promise<void> {
    for (const endpoint of [...this.#endpoints.keys()]) this.detach(endpoint);
    await this.#state.close();
  }
}

/**
 * A worker's side: every operation is one round trip to the primary's `SharedStateHub`, so the
 * same key means the same value in every worker. Subscriptions are local: the primary sends every
 * published message to every worker, including the one that published it.
 */
export class IpcSharedState implements SharedState {
  readonly kind = 'memory' as const;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  readonly #bus = new EventEmitter().setMaxListeners(0);
  #next = 0;
  #closed = false;
  readonly #listener = (message: unknown) => {
    if (isMessage<StateAnswer>(message, 'state.answer')) {
      const waiting = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      if (message.error !== undefined) waiting?.reject(new Error(`shared state: ${message.error}`));
      else waiting?.resolve(message.value);
    } else if (isMessage<StateMessage>(message, 'state.message')) this.#bus.emit(message.channel, message.message);
  };

  constructor(private readonly primary: IpcEndpoint) {
    primary.on('message', this.#listener);
  }

  #call<T>(op: Operation, ...args: Array<string | number>): Promise<T> {
    if (this.#closed) return Promise.reject(new Error('shared state is closed'));
    const id = ++this.#next;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new Error(`shared state: the primary process did not answer ${op} within ${CALL_TIMEOUT_MS} ms`));
      }, CALL_TIMEOUT_MS);
      timer.unref();
      this.#pending.set(id, {
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value as T);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      const call: StateCall = { kp: 'state.call', id, op, args };
      if (!sendQuietly(this.primary, call))
        this.#pending.get(id)?.reject(new Error('shared state: no primary process'));
    });
  }

  incrWithTtl(key: string, ttlMs: number) {
    return this.#call<{ count: number; ttlMs: number }>('incrWithTtl', key, ttlMs);
  }
  setIfAbsent(key: string, value: string, ttlMs: number) {
    return this.#call<boolean>('setIfAbsent', key, value, ttlMs);
  }
  set(key: string, value: string, ttlMs: number) {
    return this.#call<void>('set', key, value, ttlMs);
  }
  get(key: string) {
    return this.#call<string | null>('get', key);
  }
  take(key: string) {
    return this.#call<string | null>('take', key);
  }
  del(key: string) {
    return this.#call<void>('del', key);
  }
  publish(channel: string, message: string) {
    return this.#call<void>('publish', channel, message);
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    this.#bus.on(channel, handler);
    return async () => {
      this.#bus.off(channel, handler);
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.primary.off('message', this.#listener);
    this.#bus.removeAllListeners();
    for (const [id, waiting] of this.#pending) {
      this.#pending.delete(id);
      waiting.reject(new Error('shared state is closed'));
    }
  }
}

/** Sends unless the channel is already closed (a worker that died, a primary that is gone). */
function sendQuietly(endpoint: IpcEndpoint, message: unknown): boolean {
  if (endpoint.connected === false) return false;
  try {
    endpoint.send(message, () => undefined);
    return true;
  } catch {
    return false;
  }
}
