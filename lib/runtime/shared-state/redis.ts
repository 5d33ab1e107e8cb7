import { Redis } from 'ioredis';
import type { SharedState } from './types.js';

// One round trip, atomic on the server: the TTL is set only by the increment that created the key.
const INCR_WITH_TTL = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) ttl = tonumber(ARGV[1]) end
return {count, ttl}
`;

export interface RedisSharedStateOptions {
  /** Prefix of every key and channel, so several deployments can share one Redis. */
  prefix?: string;
  connectTimeoutMs?: number;
}

type WithIncr = Redis & { kpIncrWithTtl(key: string, ttlMs: number): Promise<[number, number]> };

/** Shared state on Redis: SET NX PX, GETDEL and one Lua script, so every operation is atomic on the server. */
export class RedisSharedState implements SharedState {
  readonly kind = 'redis' as const;
  private readonly client: WithIncr;
  private subscriber: Redis | null = null;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  private readonly prefix: string;

  constructor(
    readonly url: string,
    options: RedisSharedStateOptions = {},
  ) {
    this.prefix = options.prefix ?? 'kp:';
    this.client = new Redis(url, {
      lazyConnect: true,
      connectTimeout: options.connectTimeoutMs ?? 5000,
      maxRetriesPerRequest: 2,
      enableOfflineQueue: true,
    }) as WithIncr;
    this.client.defineCommand('kpIncrWithTtl', { numberOfKeys: 1, lua: INCR_WITH_TTL });
  }

  async connect(): Promise<this> {
    await this.client.connect();
    return this;
  }

  async incrWithTtl(key: string, ttlMs: number): Promise<{ count: number; ttlMs: number }> {
    const [count, ttl] = await this.client.kpIncrWithTtl(this.prefix + key, Math.max(1, Math.ceil(ttlMs)));
    return { count: Number(count), ttlMs: Number(ttl) };
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.client.set(this.prefix + key, value, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.client.set(this.prefix + key, value, 'PX', Math.max(1, Math.ceil(ttlMs)));
  }

  async get(key: string): Promise<string | null> {
    return this.client.get(this.prefix + key);
  }

  async take(key: string): Promise<string | null> {
    return this.client.getdel(this.prefix + key);
  }

  async del(key: string): Promise<void> {
    await this.client.del(this.prefix + key);
  }

  async publish(channel: string, message: string): Promise<void> {
    await this.client.publish(this.prefix + channel, message);
  }

  async subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>> {
    const full = this.prefix + channel;
    if (!this.subscriber) {
      this.subscriber = this.client.duplicate();
      this.subscriber.on('message', (from: string, message: string) => {
        for (const h of this.handlers.get(from) ?? []) h(message);
      });
    }
    let set = this.handlers.get(full);
    if (!set) {
      set = new Set();
      this.handlers.set(full, set);
      await this.subscriber.subscribe(full);
    }
    set.add(handler);
    return async () => {
      set.delete(handler);
      if (set.size === 0 && this.handlers.get(full) === set) {
        this.handlers.delete(full);
        await this.subscriber?.unsubscribe(full);
      }
    };
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    await this.client.quit().catch(() => this.client.disconnect());
  }
}
