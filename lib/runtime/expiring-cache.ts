/**
 * A bounded in-memory cache whose entries end at their own deadline. Full means cleared rather
 * than evicted one by one: these caches hold what can be recomputed (an opened cookie, a
 * verified signature), so a rare cold start costs less than bookkeeping on every hit.
 */
export class ExpiringCache<K, V> {
  readonly #entries = new Map<K, { value: V; until: number }>();

  constructor(private readonly limit: number) {}

  /** The value while `now` is before its deadline (ms). */
  get(key: K, now: number): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.until > now) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  /** Keeps `value` until `until` (ms); nothing is kept when that has passed. */
  set(key: K, value: V, until: number, now: number): void {
    if (until <= now) return;
    if (this.#entries.size >= this.limit) this.#entries.clear();
    this.#entries.set(key, { value, until });
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}
