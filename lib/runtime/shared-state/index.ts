import { MemorySharedState } from './memory.js';
import { RedisSharedState } from './redis.js';
import type { SharedState } from './types.js';

export type { SharedState };
export { MemorySharedState, RedisSharedState };

/** Redis when a URL is configured, otherwise in-process. A configured Redis that does not answer fails the start. */
export async function openSharedState(redisUrl: string | undefined, prefix?: string): Promise<SharedState> {
  if (!redisUrl) return new MemorySharedState();
  const state = new RedisSharedState(redisUrl, prefix === undefined ? {} : { prefix });
  await state.connect();
  return state;
}
