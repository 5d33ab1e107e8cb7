import { Cluster, Redis, type ChainableCommander, type RedisOptions } from 'ioredis';
import { DependencyUnavailableError, toDependencyError } from '../../errors/dependency-outage.js';
import type { DependencyMonitor } from '../dependency-monitor.js';
import type { SharedState } from './types.js';

// One round trip, atomic on the server: the TTL is set only by the increment that created the key.
const INCR_WITH_TTL = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

export interface RedisAddress {
  host: string;
  port: number;
}

/**
 * Where the Redis is: one server by URL, the master a set of Sentinels names (followed through
 * failovers), or a Redis Cluster reached from some of its nodes (docs/scaling.md#redis).
 */
export type RedisTopology =
  | { url: string }
  | {
      sentinels: RedisAddress[];
      masterName: string;
      password?: string;
      sentinelPassword?: string;
      tls?: boolean;
    }
  | { cluster: RedisAddress[]; password?: string; tls?: boolean };

export interface RedisSharedStateOptions {
  /** Prefix of every key and channel, so several deployments can share one Redis. */
  prefix?: string;
  connectTimeoutMs?: number;
  /**
   * Longest one operation may take, queued while the client reconnects (or follows a failover)
   * and waiting for its answer; then it fails as `unavailable` (redis.commandTimeoutMs).
   */
  commandTimeoutMs?: number;
  /**
   * Replicas that must hold each one-time write (`take`, `setIfAbsent`, `incrWithTtl`) before it
   * counts: Redis `WAIT` after the command, on the same connection. A write the replicas did not
   * confirm within `waitTimeoutMs` fails as `unavailable`, so its caller never acts on it.
   */
  waitReplicas?: number;
  waitTimeoutMs?: number;
  /** Told of every outage failure and success (logs and `kp_dependency_errors_total`). */
  monitor?: DependencyMonitor;
}

type Client = Redis | Cluster;
type WithIncr = { kpIncrWithTtl(key: string, ttlMs: number): Promise<[number, number]> };
type PipelineWithIncr = ChainableCommander & { kpIncrWithTtl(key: string, ttlMs: number): ChainableCommander };

/** Reconnects at once, then at most every second, so a Redis that came back is found within a second. */
const reconnectDelay = (attempt: number): number => Math.min(attempt * 100, 1000);

/**
 * A replica that a failover left behind answers writes with READONLY: reconnect (through the
 * Sentinels, to the new master) and send the refused command again; it was not executed.
 */
const followFailover = (error: Error): 2 | false => (error.message.startsWith('READONLY') ? 2 : false);

function openClient(topology: RedisTopology, connectTimeoutMs: number): Client {
  const common: RedisOptions = {
    lazyConnect: true,
    connectTimeout: connectTimeoutMs,
    // The command budget (below) bounds how long a request waits; this only stops a command
    // from being sent again and again while the server keeps refusing connections.
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    // A command in flight when the connection broke may have run: sent again after the
    // reconnection, a SET NX would find its own value and a GETDEL nothing, so a challenge
    // would read as a collision or as used. It fails as `unavailable` instead, to be retried.
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelay,
    reconnectOnError: followFailover,
  };
  if ('url' in topology) return new Redis(topology.url, common);
  if ('sentinels' in topology)
    return new Redis({
      ...common,
      sentinels: topology.sentinels,
      name: topology.masterName,
      role: 'master',
      // No failoverDetector: ioredis 5.11 disconnects on +switch-master even while it is
      // connecting, and a connect so interrupted ends the client for good. A failover is
      // followed anyway: the Sentinels close the clients of the old master when they
      // reconfigure it (CLIENT KILL), and a write it refuses as a replica reconnects (READONLY).
      sentinelRetryStrategy: reconnectDelay,
      ...(topology.password ? { password: topology.password } : {}),
      ...(topology.sentinelPassword ? { sentinelPassword: topology.sentinelPassword } : {}),
      ...(topology.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    });
  return new Cluster(topology.cluster, {
    lazyConnect: true,
    enableOfflineQueue: true,
    clusterRetryStrategy: reconnectDelay,
    // Writes and reads go to the slot's master: a replica may lag behind a one-time write.
    scaleReads: 'master',
    redisOptions: {
      connectTimeout: connectTimeoutMs,
      maxRetriesPerRequest: 2,
      autoResendUnfulfilledCommands: false,
      reconnectOnError: followFailover,
      ...(topology.password ? { password: topology.password } : {}),
      ...(topology.tls ? { tls: {} } : {}),
    },
  });
}

/** Shared state on Redis: SET NX PX, GETDEL and one Lua script, so every operation is atomic on the server. */
export class RedisSharedState implements SharedState {
  readonly kind = 'redis' as const;
  readonly topology: RedisTopology;
  private readonly client: Client & WithIncr;
  private subscriber: Client | null = null;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  private readonly prefix: string;
  private readonly commandTimeoutMs: number;
  private readonly waitReplicas: number;
  private readonly waitTimeoutMs: number;
  private readonly monitor: DependencyMonitor | undefined;
  private closed = false;

  constructor(source: string | RedisTopology, options: RedisSharedStateOptions = {}) {
    this.topology = typeof source === 'string' ? { url: source } : source;
    this.prefix = options.prefix ?? 'kp:';
    this.commandTimeoutMs = options.commandTimeoutMs ?? 2000;
    this.waitReplicas = options.waitReplicas ?? 0;
    this.waitTimeoutMs = options.waitTimeoutMs ?? 250;
    this.monitor = options.monitor;
    this.client = openClient(this.topology, options.connectTimeoutMs ?? 5000) as Client & WithIncr;
    this.client.defineCommand('kpIncrWithTtl', { numberOfKeys: 1, lua: INCR_WITH_TTL });
    this.watch(this.client);
  }

  async connect(): Promise<this> {
    await this.client.connect();
    return this;
  }

  async incrWithTtl(key: string, ttlMs: number): Promise<{ count: number; ttlMs: number }> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    const [count, left] = await this.oneTime(
      () => this.client.kpIncrWithTtl(this.prefix + key, ttl),
      (pipeline) => (pipeline as PipelineWithIncr).kpIncrWithTtl(this.prefix + key, ttl),
    );
    return { count: Number(count), ttlMs: Number(left) };
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    const reply = await this.oneTime(
      () => this.client.set(this.prefix + key, value, 'PX', ttl, 'NX'),
      (pipeline) => pipeline.set(this.prefix + key, value, 'PX', ttl, 'NX'),
    );
    return reply === 'OK';
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.run(() => this.client.set(this.prefix + key, value, 'PX', Math.max(1, Math.ceil(ttlMs))));
  }

  async get(key: string): Promise<string | null> {
    return this.run(() => this.client.get(this.prefix + key));
  }

  async take(key: string): Promise<string | null> {
    return this.oneTime(
      () => this.client.getdel(this.prefix + key),
      (pipeline) => pipeline.getdel(this.prefix + key),
    );
  }

  async del(key: string): Promise<void> {
    await this.run(() => this.client.del(this.prefix + key));
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.run(() => this.client.publish(this.prefix + channel, message));
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const full = this.prefix + channel;
    if (!this.subscriber) {
      const subscriber = this.client.duplicate();
      this.watch(subscriber);
      subscriber.on('message', (from: string, message: string) => {
        for (const h of this.handlers.get(from) ?? []) h(message);
      });
      this.subscriber = subscriber;
    }
    const subscriber = this.subscriber;
    let set = this.handlers.get(full);
    if (!set) {
      set = new Set();
      this.handlers.set(full, set);
      await this.run(() => subscriber.subscribe(full));
    }
    set.add(handler);
    return async () => {
      set.delete(handler);
      if (set.size === 0 && this.handlers.get(full) === set) {
        this.handlers.delete(full);
        await this.run(() => subscriber.unsubscribe(full));
      }
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.subscriber?.disconnect();
    // QUIT lets the server finish what was sent; it would only wait in the offline queue for a
    // Redis that is gone. disconnect() also ends what QUIT does not: the Sentinel connections
    // of the failover detector, and the reconnection timer.
    if (this.client.status === 'ready') await this.within(this.client.quit()).catch(() => undefined);
    this.client.disconnect();
  }

  /**
   * A connection's own errors (each reconnection attempt) are not calls that failed: the
   * commands waiting on it fail and are reported. Listening keeps ioredis from printing them.
   */
  private watch(client: Client): void {
    client.on('error', () => undefined);
    // A Cluster reports each node's connection errors apart.
    client.on('node error', () => undefined);
    // ioredis stops for good ("end") when a connection attempt is cut short rather than failed
    // (its Sentinel connector, disconnected mid-connect); nothing but close() may stop this one.
    client.on('end', () => {
      if (this.closed) return;
      setTimeout(() => {
        if (!this.closed && client.status === 'end') client.connect().catch(() => undefined);
      }, 1000).unref();
    });
  }

  /** One command within the budget; an outage becomes `DependencyUnavailableError`. */
  private async run<T>(command: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await this.within(command());
    } catch (error) {
      throw this.failure(error);
    }
    this.monitor?.succeeded('redis');
    return result;
  }

  /**
   * A write that must not be lost in a failover once its caller acts on it: with `waitReplicas`,
   * sent in one pipeline with `WAIT` (same connection, so WAIT covers it), and refused as
   * `unreplicated` when fewer replicas confirmed it in time. The value is then not handed out:
   * a consumed challenge the new master would still hold was never accepted.
   */
  private async oneTime<T>(
    command: () => Promise<T>,
    queued: (pipeline: ChainableCommander) => ChainableCommander,
  ): Promise<T> {
    if (this.waitReplicas === 0) return this.run(command);
    const deadline = Date.now() + this.commandTimeoutMs;
    for (;;) {
      const replies = await this.run(() =>
        queued(this.client.pipeline()).wait(this.waitReplicas, this.waitTimeoutMs).exec(),
      );
      const [reply, wait] = replies ?? [];
      const error = reply?.[0] ?? wait?.[0];
      if (error && this.client instanceof Cluster && Date.now() < deadline && (await redirected(this.client, error)))
        continue;
      if (error || !reply || !wait) throw this.failure(error ?? new Error('Connection is closed.'));
      const acknowledged = Number(wait[1]);
      if (acknowledged < this.waitReplicas) {
        const failure = new DependencyUnavailableError(
          'redis',
          'unreplicated',
          `${acknowledged} of ${this.waitReplicas} replicas confirmed the write within ${this.waitTimeoutMs} ms`,
        );
        this.monitor?.record(failure);
        throw failure;
      }
      this.monitor?.succeeded('redis');
      return reply[1] as T;
    }
  }

  /** Rejects as a timeout when `command` has not settled within the command budget. */
  private within<T>(command: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // ioredis's own message for a command that timed out, so the classifier reads both alike.
      const timer = setTimeout(() => reject(new Error('Command timed out')), this.commandTimeoutMs);
      command.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  /** The error to throw for `error`: an outage as `DependencyUnavailableError` (and told to the monitor), anything else as it is. */
  private failure(error: unknown): unknown {
    return (this.monitor ? this.monitor.failure('redis', error) : toDependencyError('redis', error)) ?? error;
  }
}

/**
 * A Cluster node that does not serve the key's slot (any more: a failover or a resharding moved
 * it) answers MOVED, or TRYAGAIN and CLUSTERDOWN while slots move; the command did not run.
 * ioredis follows these for single commands, not for a pipeline holding WAIT (not read-only),
 * so the slot map is refreshed here and the caller sends the pipeline again. False for any
 * other error.
 */
async function redirected(cluster: Cluster, error: Error): Promise<boolean> {
  const word = error.message.split(' ', 1)[0];
  if (word !== 'MOVED' && word !== 'TRYAGAIN' && word !== 'CLUSTERDOWN') return false;
  if (word === 'MOVED') await new Promise<void>((resolve) => cluster.refreshSlotsCache(() => resolve()));
  else await new Promise((resolve) => setTimeout(resolve, 100));
  return true;
}
