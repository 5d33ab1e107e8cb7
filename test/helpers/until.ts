// Polling with a deadline, for tests that wait on real peers, timers or other processes. Kept apart
// from own-process.ts (which re-exports it) so that a unit-tier test can wait without importing the
// process helpers (test/tiers/tiers.mjs places a file by what it imports).

/**
 * Polls `check` until it returns a value other than undefined, or throws `what` at the deadline.
 * The deadline is for a hang, not for a slow machine: a loaded CI runner may take seconds where a
 * quiet laptop takes milliseconds. An error `final` accepts ends the wait at once (a process that
 * exited will not answer later).
 */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  final: (error: unknown) => boolean = () => false,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (final(error)) throw error;
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
