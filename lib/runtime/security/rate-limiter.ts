import type { SharedState } from '../shared-state/types.js';

export interface RateLimitDecision {
  allowed: boolean;
  remaining: number;
  /** Time until the window resets; the Retry-After a refusal sends. */
  retryAfterMs: number;
}

/**
 * Fixed-window counters in shared state, so a limit holds across replicas. One `incrWithTtl`
 * per hit: the first hit of a window opens it, every later one only counts.
 */
export class RateLimiter {
  constructor(private readonly state: SharedState) {}

  async hit(bucket: string, subject: string, limit: { max: number; windowMs: number }): Promise<RateLimitDecision> {
    const { count, ttlMs } = await this.state.incrWithTtl(`rl:${bucket}:${subject}`, limit.windowMs);
    return { allowed: count <= limit.max, remaining: Math.max(0, limit.max - count), retryAfterMs: Math.max(0, ttlMs) };
  }
}
