/**
 * Short-lived state that every replica must agree on: rate-limit counters, lockouts, one-time
 * challenges and codes, DPoP replay caches, change notices. Every one-time value goes through
 * `take` or `setIfAbsent`; nothing does get-then-delete.
 */
export interface SharedState {
  /** Adds one and returns the count with the time left on the key; the TTL is set by the first increment. */
  incrWithTtl(key: string, ttlMs: number): Promise<{ count: number; ttlMs: number }>;
  /** Stores `value` only if `key` is absent; true when this call stored it. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** Stores `value`, replacing any previous one. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  get(key: string): Promise<string | null>;
  /** Atomically reads and deletes: of two concurrent takes, exactly one gets the value. */
  take(key: string): Promise<string | null>;
  del(key: string): Promise<void>;
  publish(channel: string, message: string): Promise<void>;
  /** Calls `handler` for every message on `channel` until the returned function is called. */
  subscribe(channel: string, handler: (message: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  readonly kind: 'memory' | 'redis';
}
