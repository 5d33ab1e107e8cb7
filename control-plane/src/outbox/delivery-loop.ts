import { Counter, Gauge, type Registry } from 'prom-client';
import { randomId } from '#lib/crypto/random.js';
import { isFetchRefusal } from '#lib/fetch/guarded-fetch.js';

/**
 * The one delivery loop behind everything that leaves (docs/architecture.md#the-ledgers-write-path):
 * back-channel logout tokens and webhooks today. A subscriber's rows are written in the
 * transaction that wrote the receipt (the outbox); this loop runs outside it, claims due rows
 * with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, SQLite's one writer), delivers them at
 * least once, and lets the subscriber's adapter write each outcome: delivered, another try after
 * a growing wait, or dead. A replica killed mid-delivery leaves its rows leased; the lease runs
 * out and whichever replica polls next delivers them again.
 */

/** How one attempt ended: delivered, worth another try, or never going to work. */
export type DeliveryOutcome =
  { kind: 'delivered'; status: number } | { kind: 'retry' | 'abandon'; error: string; status?: number };

/** What the loop does with a subscriber's rows: the small adapter each delivery target is. */
export interface OutboxAdapter<Row> {
  /** Names the subscriber in metrics (`webhook`, `backchannel_logout`). */
  readonly subscriber: string;
  /** Leases up to `limit` rows due at `now` to `holder` until `leaseUntil`, atomically. */
  claimDue(now: number, holder: string, leaseUntil: number, limit: number): Promise<Row[]>;
  /** Makes one attempt; throws only when Keyplane itself failed (counted as a retry). */
  attempt(row: Row): Promise<DeliveryOutcome>;
  /** Writes the outcome (and its receipts) if `holder` still holds the row; says what the row became. */
  settle(row: Row, outcome: DeliveryOutcome, holder: string): Promise<'delivered' | 'pending' | 'dead' | 'lost'>;
  /** Rows waiting, and when the oldest was queued (ms), for the metrics. */
  backlog(): Promise<{ pending: number; oldestCreatedAt: number | null }>;
  /** Deletes finished rows kept long enough. */
  purge?(now: number): Promise<number>;
}

export interface DeliveryLoopOptions {
  pollIntervalMs: number;
  /** How long claimed rows stay this replica's (LEASE_MS unless the subscriber's config says). */
  leaseMs?: number;
  now: () => number;
  metrics: OutboxMetrics;
  onError?: (error: unknown) => void;
}

/** A claimed row is this replica's for this long; one that crashed meanwhile leaves it to the others after. */
const LEASE_MS = 60_000;
/** Rows claimed per round, and sent at most this many at a time (well inside the lease even when each times out). */
const BATCH = 20;
const CONCURRENCY = 5;
const PURGE_EVERY_MS = 3_600_000;

/**
 * The outbox metrics, one set per registry, labelled by subscriber: queued (gauge), delivered,
 * failed attempts and dead rows (counters), and the age of the oldest queued row (gauge).
 */
export class OutboxMetrics {
  readonly delivered: Counter<'subscriber'>;
  readonly failed: Counter<'subscriber'>;
  readonly dead: Counter<'subscriber'>;
  private readonly backlogs = new Map<string, () => Promise<{ pending: number; oldestCreatedAt: number | null }>>();

  constructor(registry: Registry, now: () => number) {
    const labelNames = ['subscriber'] as const;
    this.delivered = new Counter({
      name: 'keyplane_outbox_delivered_total',
      help: 'Outbox rows delivered (a 2xx answer), by subscriber.',
      labelNames,
      registers: [registry],
    });
    this.failed = new Counter({
      name: 'keyplane_outbox_failed_total',
      help: 'Delivery attempts that failed (to be retried or dead), by subscriber.',
      labelNames,
      registers: [registry],
    });
    this.dead = new Counter({
      name: 'keyplane_outbox_dead_total',
      help: 'Outbox rows given up on (dead-lettered), by subscriber.',
      labelNames,
      registers: [registry],
    });
    const backlogs = this.backlogs;
    const read = async () =>
      Promise.all([...backlogs].map(async ([subscriber, backlog]) => ({ subscriber, ...(await backlog()) })));
    new Gauge({
      name: 'keyplane_outbox_queued',
      help: 'Outbox rows waiting for delivery, by subscriber.',
      labelNames,
      registers: [registry],
      async collect() {
        for (const { subscriber, pending } of await read()) this.set({ subscriber }, pending);
      },
    });
    new Gauge({
      name: 'keyplane_outbox_oldest_age_seconds',
      help: 'Age of the oldest outbox row waiting for delivery (0 when none), by subscriber.',
      labelNames,
      registers: [registry],
      async collect() {
        for (const { subscriber, oldestCreatedAt } of await read())
          this.set({ subscriber }, oldestCreatedAt === null ? 0 : Math.max(0, (now() - oldestCreatedAt) / 1000));
      },
    });
  }

  /** Registers a subscriber's backlog for the gauges. */
  watch(subscriber: string, backlog: () => Promise<{ pending: number; oldestCreatedAt: number | null }>): void {
    this.backlogs.set(subscriber, backlog);
  }
}

/** Delivers a subscriber's due rows: on a timer, and at once when this replica queues one (`nudge`). */
export class DeliveryLoop<Row> {
  private readonly holder = randomId('dlv');
  private timer: NodeJS.Timeout | null = null;
  private purger: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private again = false;
  private closed = false;

  constructor(
    private readonly adapter: OutboxAdapter<Row>,
    private readonly options: DeliveryLoopOptions,
  ) {
    options.metrics.watch(adapter.subscriber, () => adapter.backlog());
  }

  start(): void {
    this.timer = setInterval(() => this.nudge(), this.options.pollIntervalMs);
    this.timer.unref();
    const purge = this.adapter.purge?.bind(this.adapter);
    if (purge) {
      this.purger = setInterval(
        () => void purge(this.options.now()).catch((error: unknown) => this.options.onError?.(error)),
        PURGE_EVERY_MS,
      );
      this.purger.unref();
    }
    this.nudge();
  }

  /**
   * Runs a delivery round soon; a round in progress runs once more when it ends. Nothing before
   * `start()`: a worker under `--workers N` leaves delivery to the primary's loop.
   */
  nudge(): void {
    if (this.closed || !this.timer) return;
    setImmediate(() => void this.deliverDue().catch((error: unknown) => this.options.onError?.(error)));
  }

  /** Delivers every row due now; returns how many attempts were made. Tests call it directly. */
  async deliverDue(): Promise<number> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = (async () => {
      let attempted = 0;
      do {
        this.again = false;
        for (;;) {
          if (this.closed) return attempted;
          const now = this.options.now();
          const due = await this.adapter.claimDue(now, this.holder, now + (this.options.leaseMs ?? LEASE_MS), BATCH);
          for (let i = 0; i < due.length; i += CONCURRENCY)
            await Promise.all(due.slice(i, i + CONCURRENCY).map((row) => this.deliver(row)));
          attempted += due.length;
          if (due.length < BATCH) break;
        }
      } while (this.again);
      return attempted;
    })();
    this.running = run;
    try {
      return await run;
    } finally {
      this.running = null;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.purger) clearInterval(this.purger);
    await this.running?.catch(() => undefined);
  }

  private async deliver(row: Row): Promise<void> {
    let outcome: DeliveryOutcome;
    try {
      outcome = await this.adapter.attempt(row);
    } catch (error) {
      this.options.onError?.(error);
      outcome = { kind: 'retry', error: 'internal' };
    }
    const labels = { subscriber: this.adapter.subscriber };
    const became = await this.adapter.settle(row, outcome, this.holder);
    if (became === 'lost') return;
    if (outcome.kind === 'delivered') this.options.metrics.delivered.inc(labels);
    else this.options.metrics.failed.inc(labels);
    if (became === 'dead') this.options.metrics.dead.inc(labels);
  }
}

/** Fetch reasons worth another try; every other refusal (not https, an internal address) never heals. */
const TRANSIENT_FETCH_FAILURES = ['fetch_failed', 'fetch_timeout', 'fetch_unresolvable', 'fetch_too_large'];

/** The outcome of an attempt whose fetch threw: a guarded-fetcher refusal, judged; anything else is rethrown. */
export function outcomeOfFetchFailure(error: unknown): DeliveryOutcome {
  if (!isFetchRefusal(error)) throw error;
  return { kind: TRANSIENT_FETCH_FAILURES.includes(error.reason) ? 'retry' : 'abandon', error: error.reason };
}
