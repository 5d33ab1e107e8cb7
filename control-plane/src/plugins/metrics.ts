import fp from 'fastify-plugin';
import { Counter, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import type { FastifyInstance } from 'fastify';

/** Request counters and latency histograms per route, on the instance's own registry. */
export const metricsPlugin = fp(
  async (app: FastifyInstance, options: { registry: Registry }) => {
    const registry = options.registry;
    collectDefaultMetrics({ register: registry, prefix: 'keyplane_' });
    const requests = new Counter({
      name: 'keyplane_http_requests_total',
      help: 'HTTP requests by method, route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    });
    const latency = new Histogram({
      name: 'keyplane_http_request_duration_seconds',
      help: 'HTTP request latency by method and route',
      labelNames: ['method', 'route'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    // The labelled series of each method, route and status, looked up once: prom-client hashes
    // the label object on every `inc` and `observe` otherwise. Bounded by the route table.
    const series = new Map<string, { requests: Counter.Internal; latency: Histogram.Internal<string> }>();
    app.addHook('onResponse', (request, reply, done) => {
      // Unmatched paths share one label so that scanners cannot blow up the series count.
      const route = request.routeOptions.url ?? 'unmatched';
      const key = `${request.method} ${reply.statusCode} ${route}`;
      let found = series.get(key);
      if (found === undefined) {
        found = {
          requests: requests.labels({ method: request.method, route, status: String(reply.statusCode) }),
          latency: latency.labels({ method: request.method, route }),
        };
        series.set(key, found);
      }
      found.requests.inc();
      found.latency.observe(reply.elapsedTime / 1000);
      done();
    });
  },
  { name: 'keyplane-metrics' },
);
