import type { SharedState } from '../runtime/shared-state/types.js';
import { randomToken } from '../crypto/random.js';

/**
 * One piece of work per key at a time across every replica (docs/gateway.md#browser-sessions: one refresh per
 * session; oauth2-proxy users are logged out when parallel requests race a rotating refresh
 * token). The first caller takes a lock in shared state and does the work; the others, here
 * or on another replica, wait for its stored result instead of doing the work again.
 * The result is stored as given, so store only what may sit in shared state (a sealed cookie
 * value, not a raw token).
 */

export type FlightResult =
  { ok: true; value: string; leader: boolean } | { ok: false; reason: 'failed' | 'timeout'; leader: boolean };

export interface SingleFlightOptions {
  /** How long the lock holds if its owner dies mid-work. */
  lockMs: number;
  /** How long waiters wait for the result before giving up. */
  waitMs: number;
  /** How long the result stays readable for late arrivals. */
  resultMs: number;
  /** Poll interval for waiters (default 20 ms). */
  pollMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

const FAILED = '\u0000failed';

export async function runSingleFlight(
  state: SharedState,
  key: string,
  work: () => Promise<string>,
  options: SingleFlightOptions,
): Promise<FlightResult> {
  const resultKey = `flight:result:${key}`;
  const lockKey = `flight:lock:${key}`;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const read = (value: string | null, leader: boolean): FlightResult | null =>
    value === null ? null : value === FAILED ? { ok: false, reason: 'failed', leader } : { ok: true, value, leader };

  const done = read(await state.get(resultKey), false);
  if (done) return done;
  if (await state.setIfAbsent(lockKey, randomToken(12), options.lockMs)) {
    let value: string;
    try {
      value = await work();
    } catch {
      await state.set(resultKey, FAILED, options.resultMs);
      await state.del(lockKey);
      return { ok: false, reason: 'failed', leader: true };
    }
    await state.set(resultKey, value, options.resultMs);
    await state.del(lockKey);
    return { ok: true, value, leader: true };
  }
  const deadline = now() + options.waitMs;
  while (now() < deadline) {
    await sleep(options.pollMs ?? 20);
    const result = read(await state.get(resultKey), false);
    if (result) return result;
  }
  return { ok: false, reason: 'timeout', leader: false };
}

/**
 * Drops the stored result of `key`, so the next caller runs the work again. For a leader whose
 * work ended in a passing failure (the control plane did not answer): late arrivals should try
 * again, not read that failure for `resultMs`.
 */
export async function forgetSingleFlight(state: SharedState, key: string): Promise<void> {
  await state.del(`flight:result:${key}`);
}
