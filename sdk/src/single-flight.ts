/**
 * One run per key at a time, and the settled result remembered for a while, so that a caller
 * arriving just after with the same key (a request that read the old cookie) gets the same answer
 * instead of starting the operation again.
 */
export class SingleFlight<T> {
  private readonly running = new Map<string, Promise<T>>();
  private readonly settled = new Map<string, { value: T; until: number }>();

  constructor(private readonly options: { rememberMs: number; max: number; now?: () => number }) {}

  run(key: string, operation: () => Promise<T>): Promise<T> {
    const now = (this.options.now ?? Date.now)();
    const done = this.settled.get(key);
    if (done && done.until > now) return Promise.resolve(done.value);
    const inFlight = this.running.get(key);
    if (inFlight) return inFlight;
    const started = operation()
      .then((value) => {
        this.remember(key, value, now);
        return value;
      })
      .finally(() => this.running.delete(key));
    this.running.set(key, started);
    return started;
  }

  private remember(key: string, value: T, now: number): void {
    for (const [old, entry] of this.settled) if (entry.until <= now) this.settled.delete(old);
    // Oldest first: a Map iterates in insertion order.
    while (this.settled.size >= this.options.max) this.settled.delete(this.settled.keys().next().value as string);
    this.settled.set(key, { value, until: now + this.options.rememberMs });
  }
}
