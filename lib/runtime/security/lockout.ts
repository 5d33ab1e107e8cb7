import type { SharedState } from '../shared-state/types.js';

export interface LockoutPolicy {
  threshold: number;
  lockMs: number;
}

export interface LockoutStatus {
  locked: boolean;
  retryAfterMs: number;
}

export interface FailureResult extends LockoutStatus {
  failures: number;
  /** True for exactly one failure: the one that started the lockout (for its receipt and event). */
  started: boolean;
}

/**
 * Counts failed guesses of a secret per subject (an account and method) and locks the subject
 * once they reach the threshold. Failures expire with the lock window; a success clears them.
 */
export class Lockout {
  constructor(
    private readonly state: SharedState,
    private readonly policy: LockoutPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  async status(subject: string): Promise<LockoutStatus> {
    const until = await this.state.get(`lock:${subject}`);
    const retryAfterMs = until ? Number(until) - this.now() : 0;
    return { locked: retryAfterMs > 0, retryAfterMs: Math.max(0, retryAfterMs) };
  }

  /** Failures counted in the current window (the threshold while locked). */
  async failures(subject: string): Promise<number> {
    if ((await this.status(subject)).locked) return this.policy.threshold;
    return Number((await this.state.get(`fail:${subject}`)) ?? 0);
  }

  async recordFailure(subject: string): Promise<FailureResult> {
    const current = await this.status(subject);
    if (current.locked) return { ...current, failures: this.policy.threshold, started: false };
    const { count } = await this.state.incrWithTtl(`fail:${subject}`, this.policy.lockMs);
    if (count < this.policy.threshold) return { locked: false, retryAfterMs: 0, failures: count, started: false };
    const until = this.now() + this.policy.lockMs;
    const started = await this.state.setIfAbsent(`lock:${subject}`, String(until), this.policy.lockMs);
    if (started) await this.state.del(`fail:${subject}`);
    const status = await this.status(subject);
    return { ...status, locked: true, failures: count, started };
  }

  async recordSuccess(subject: string): Promise<void> {
    await this.state.del(`fail:${subject}`);
  }
}
