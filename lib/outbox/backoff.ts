/** How the waits between delivery attempts grow: from `firstMs`, times `factor` each failure, up to `maxMs`. */
export interface BackoffPolicy {
  firstMs: number;
  factor: number;
  maxMs: number;
}

/**
 * The wait before attempt `attempts + 1`, after `attempts` failed ones: exponential, capped, and
 * with up to a tenth added at random (`jitter` in [0, 1)) so that a receiver that came back is
 * not met by every queued delivery in the same second.
 */
export function backoffMs(attempts: number, policy: BackoffPolicy, jitter = 0): number {
  const base = Math.min(policy.maxMs, policy.firstMs * policy.factor ** Math.max(0, attempts - 1));
  return Math.round(base * (1 + Math.min(Math.max(jitter, 0), 1) / 10));
}
