/**
 * Requests and their latency per method and route, counted in plain numbers as requests complete
 * and turned into Prometheus series only when `/metrics` is read. prom-client's labelled counter
 * and histogram hash their label object on every `inc` and `observe`; that cost about 1.5 µs of a
 * `/healthz` request (bench:healthz, docs/performance.md). The two metrics below are handed to a
 * prom-client registry as metrics of its own kind (`name`, `help`, `type`, `get()`, `reset()`), so
 * the exposition format, content type and default metrics stay prom-client's.
 */

/** What prom-client's registry reads from a metric when it writes the exposition text. */
export interface RegistryMetric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  get(): Promise<{
    name: string;
    help: string;
    type: 'counter' | 'histogram';
    aggregator: 'sum';
    values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
  }>;
  reset(): void;
}

/** One method and route: its answers by status, and its latencies in buckets. */
export class RouteSeries {
  readonly statuses = new Map<number, number>();
  /** Observations per bucket, not cumulative: the i-th counts values in (bounds[i-1], bounds[i]]. */
  readonly inBucket: Float64Array;
  count = 0;
  sum = 0;

  constructor(
    readonly method: string,
    readonly route: string,
    private readonly bounds: readonly number[],
  ) {
    this.inBucket = new Float64Array(bounds.length);
  }

  /** One completed request: its status and how long it took, in seconds. */
  record(status: number, seconds: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    this.count++;
    this.sum += seconds;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (seconds <= bounds[i]!) {
        this.inBucket[i]!++;
        return;
      }
    }
  }

  reset(): void {
    this.statuses.clear();
    this.inBucket.fill(0);
    this.count = 0;
    this.sum = 0;
  }
}

/** The series of one route, by method: what a route's config holds, so a request finds its series without a key. */
export class RouteEntry {
  readonly #byMethod = new Map<string, RouteSeries>();

  constructor(
    readonly route: string,
    private readonly newSeries: (method: string) => RouteSeries,
  ) {}

  series(method: string): RouteSeries {
    let found = this.#byMethod.get(method);
    if (found === undefined) {
      found = this.newSeries(method);
      this.#byMethod.set(method, found);
    }
    return found;
  }
}

export class RouteMetrics {
  readonly #entries = new Map<string, RouteEntry>();
  readonly #series: RouteSeries[] = [];

  /** `bounds`: the histogram's upper bounds in seconds, ascending (+Inf is implied). */
  constructor(readonly bounds: readonly number[]) {}

  /** The entry of a route pattern (one per pattern: bounded by the route table, plus `unmatched`). */
  route(route: string): RouteEntry {
    let entry = this.#entries.get(route);
    if (entry === undefined) {
      entry = new RouteEntry(route, (method) => {
        const series = new RouteSeries(method, route, this.bounds);
        this.#series.push(series);
        return series;
      });
      this.#entries.set(route, entry);
    }
    return entry;
  }

  /** A counter of requests by method, route and status. */
  requestsMetric(name: string, help: string): RegistryMetric {
    return this.#metric(name, help, 'counter', () =>
      this.#series.flatMap((series) =>
        [...series.statuses].map(([status, value]) => ({
          value,
          labels: { method: series.method, route: series.route, status: String(status) },
        })),
      ),
    );
  }

  /** A histogram of latency in seconds by method and route. */
  latencyMetric(name: string, help: string): RegistryMetric {
    return this.#metric(name, help, 'histogram', () =>
      this.#series
        .filter((series) => series.count > 0)
        .flatMap((series) => {
          const labels = { method: series.method, route: series.route };
          let cumulative = 0;
          return [
            ...this.bounds.map((le, i) => {
              cumulative += series.inBucket[i]!;
              return { metricName: `${name}_bucket`, value: cumulative, labels: { ...labels, le } };
            }),
            { metricName: `${name}_bucket`, value: series.count, labels: { ...labels, le: '+Inf' } },
            { metricName: `${name}_sum`, value: series.sum, labels },
            { metricName: `${name}_count`, value: series.count, labels },
          ];
        }),
    );
  }

  #metric(
    name: string,
    help: string,
    type: 'counter' | 'histogram',
    values: () => { value: number; labels: Record<string, string | number>; metricName?: string }[],
  ): RegistryMetric {
    const series = this.#series;
    return {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      reset: () => {
        for (const one of series) one.reset();
      },
    };
  }
}
