import {
  isDependencyUnavailable,
  toDependencyError,
  type Dependency,
  type DependencyUnavailableError,
} from '../errors/dependency-outage.js';

/** What a service does with the monitor's news: log an outage once, count every failed call. */
export interface DependencyListener {
  /** The first failed call after the dependency last answered: the outage began. */
  down?(dependency: Dependency, failure: DependencyUnavailableError): void;
  /** The first call that answered after an outage: it is over, after `downMs`. */
  up?(dependency: Dependency, downMs: number): void;
  /** Every call that failed as an outage (`kp_dependency_errors_total`). */
  failed?(dependency: Dependency, failure: DependencyUnavailableError): void;
}

/**
 * Tracks whether each dependency answers, from the calls the service makes anyway (no probe of
 * its own): the boundaries report each outage failure and each success. Listeners hear of an
 * outage once when it begins and once when it ends, however many requests fail meanwhile, so
 * the log says "PostgreSQL went away" and "PostgreSQL is back", not one line per request.
 */
export class DependencyMonitor {
  private readonly downSince = new Map<Dependency, number>();
  private readonly listeners = new Set<DependencyListener>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Adds a listener; the returned function removes it. */
  listen(listener: DependencyListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /**
   * Records `error` if it is an outage of `dependency` and returns it as the error to throw;
   * null (nothing recorded) when it is not an outage. One that is already a
   * `DependencyUnavailableError` was recorded where it was made and is returned as it is.
   */
  failure(dependency: Dependency, error: unknown): DependencyUnavailableError | null {
    if (isDependencyUnavailable(error)) return error;
    const failure = toDependencyError(dependency, error);
    if (failure) this.record(failure);
    return failure;
  }

  /** Records a failure made by the caller (a budget that ran out, a write the replicas did not confirm). */
  record(failure: DependencyUnavailableError): void {
    const { dependency } = failure;
    const fresh = !this.downSince.has(dependency);
    if (fresh) this.downSince.set(dependency, this.now());
    for (const listener of this.listeners) {
      if (fresh) listener.down?.(dependency, failure);
      listener.failed?.(dependency, failure);
    }
  }

  /** A call to `dependency` answered: ends its outage if one was on. Cheap when none is. */
  succeeded(dependency: Dependency): void {
    if (this.downSince.size === 0) return;
    const since = this.downSince.get(dependency);
    if (since === undefined) return;
    this.downSince.delete(dependency);
    const downMs = Math.max(0, this.now() - since);
    for (const listener of this.listeners) listener.up?.(dependency, downMs);
  }

  /** Whether `dependency`'s last call failed as an outage. */
  isDown(dependency: Dependency): boolean {
    return this.downSince.has(dependency);
  }
}
