import type { DependencyMonitor } from '../dependency-monitor.js';
import { MemorySharedState } from './memory.js';
import type { RedisAddress, RedisTopology } from './redis.js';
import type { SharedState } from './types.js';

export type { SharedState, RedisTopology };
export { MemorySharedState };

/** The configuration keys shared state is opened from (`redisUrl` and the `redis` group, docs/configuration.md). */
export interface SharedStateSettings {
  redisUrl?: string | undefined;
  redis: {
    sentinels: readonly string[];
    masterName?: string | undefined;
    clusterNodes: readonly string[];
    password?: string | undefined;
    sentinelPassword?: string | undefined;
    tls: boolean;
    commandTimeoutMs: number;
    waitReplicas: number;
    waitTimeoutMs: number;
  };
}

/** `host:port` or `[v6]:port`, as the config schema's pattern admits it. */
export function parseRedisAddress(text: string): RedisAddress {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text);
  if (!match) throw new Error(`not a host:port address: ${text}`);
  return { host: match[1]!, port: Number(match[2]) };
}

/** The Redis to use, or null for in-process state: the URL, else the Sentinels, else the Cluster. */
export function redisTopologyOf(settings: SharedStateSettings): RedisTopology | null {
  const { redis } = settings;
  const credentials = { ...(redis.password ? { password: redis.password } : {}), ...(redis.tls ? { tls: true } : {}) };
  if (settings.redisUrl) return { url: settings.redisUrl };
  if (redis.sentinels.length > 0 && redis.masterName)
    return {
      sentinels: redis.sentinels.map(parseRedisAddress),
      masterName: redis.masterName,
      ...credentials,
      ...(redis.sentinelPassword ? { sentinelPassword: redis.sentinelPassword } : {}),
    };
  if (redis.clusterNodes.length > 0) return { cluster: redis.clusterNodes.map(parseRedisAddress), ...credentials };
  return null;
}

/**
 * Redis when one is configured (a URL, Sentinels or a Cluster), otherwise in-process. A
 * configured Redis that does not answer fails the start.
 */
export async function openSharedState(
  source: SharedStateSettings | string | undefined,
  prefix?: string,
  monitor?: DependencyMonitor,
): Promise<SharedState> {
  const topology = typeof source === 'string' ? { url: source } : source ? redisTopologyOf(source) : null;
  if (!topology) return new MemorySharedState();
  // ioredis is loaded only when a Redis is configured: about 0.06 to 0.09 s of CPU that every
  // in-process start (each test file that builds the app) paid (docs/platform.md#test-tiers).
  const { RedisSharedState } = await import('./redis.js');
  const redis = typeof source === 'object' ? source.redis : undefined;
  const state = new RedisSharedState(topology, {
    ...(prefix === undefined ? {} : { prefix }),
    ...(monitor ? { monitor } : {}),
    ...(redis
      ? {
          commandTimeoutMs: redis.commandTimeoutMs,
          waitReplicas: redis.waitReplicas,
          waitTimeoutMs: redis.waitTimeoutMs,
        }
      : {}),
  });
  try {
    await state.connect();
  } catch (error) {
    await state.close();
    throw error;
  }
  return state;
}
