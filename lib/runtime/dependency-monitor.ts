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
  /** The dependency has answered for the settle period: the outage ended, `downMs` after it began. */
  up?(dependency: Dependency, downMs: number): void;
  /** Every call that failed as an outage (`kp_dependency_errors_total`). */
  failed?(dependency: Dependency, failure: DependencyUnavailableError): void;
}

export interface DependencyMonitorOptions {
  now?: () => number;
  /**
   * How long a dependency must answer without a failure before its outage counts as over. A
   * failover answers, fails and answers again for a few seconds (a Sentinel names the new
   * master, the last replica catches up); that is one outage, not three. 0 ends it at once.
   */
  settleMs?: number;
}

interface Outage {
  since: number;
  /** When it first answered again, while that is not settled yet. */
  answeredAt?: number;
  settle?: NodeJS.Timeout;
}

/**
 * Tracks whether each dependency answers, from the calls the service makes anyway (no probe of
 * its own): the boundaries report each outage failure and each success. Listeners hear of an
 * outage once when it begins and once when it ends, however many requests fail meanwhile, so
 * the log says "PostgreSQL went away" and "PostgreSQL is back", not one line per request.
 */
export class DependencyMonitor {
  private readonly outages = new Map<Dependency, Outage>();
  private readonly listeners = new Set<DependencyListener>();
  private readonly now: () => number;
  private readonly settleMs: number;

  constructor(options: DependencyMonitorOptions = {}) {
    this.now = options.now ?? Date.now;
    this.settleMs = options.settleMs ?? 5000;
  }

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
    const outage = this.outages.get(dependency);
    if (outage) {
      // It answered, then failed again before it settled: the same outage goes on.
      clearTimeout(outage.settle);
      delete outage.answeredAt;
      delete outage.settle;
    } else this.outages.set(dependency, { since: this.now() });
    for (const listener of this.listeners) {
      if (!outage) listener.down?.(dependency, failure);
      listener.failed?.(dependency, failure);
    }
  }

  /** A call to `dependency` answered: ends its outage once it has answered for the settle period. Cheap when none is on. */
  succeeded(dependency: Dependency): void {
    if (this.outages.size === 0) return;
    const outage = this.outages.get(dependency);
    if (!outage || outage.answeredAt !== undefined) return;
    outage.answeredAt = this.now();
    if (this.settleMs === 0) return this.end(dependency, outage);
    outage.settle = setTimeout(() => this.end(dependency, outage), this.settleMs);
    outage.settle.unref();
  }

  /** Whether `dependency` is in an outage (its last calls failed, or it has not answered for the settle period yet). */
  isDown(dependency: Dependency): boolean {
    return this.outages.has(dependency);
  }

  private end(dependency: Dependency, outage: Outage): void {
    if (this.outages.get(dependency) !== outage || outage.answeredAt === undefined) return;
    this.outages.delete(dependency);
    const downMs = Math.max(0, outage.answeredAt - outage.since);
    for (const listener of this.listeners) listener.up?.(dependency, downMs);
  }
}
