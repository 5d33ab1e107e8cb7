import fp from 'fastify-plugin';
import { collectDefaultMetrics, type Registry } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import { RouteMetrics, type RouteEntry } from '#lib/metrics/route-metrics.js';

/** Where a route's config holds its series (set once per route, when it is added). */
const ROUTE_METRICS = Symbol('keyplane.routeMetrics');

/** Request counters and latency histograms per route, on the instance's own registry. */
export const metricsPlugin = fp(
  async (app: FastifyInstance, options: { registry: Registry }) => {
    const registry = options.registry;
    collectDefaultMetrics({ register: registry, prefix: 'keyplane_' });
    const metrics = new RouteMetrics([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]);
    registry.registerMetric(
      metrics.requestsMetric('keyplane_http_requests_total', 'HTTP requests by method, route and status') as never,
    );
    registry.registerMetric(
      metrics.latencyMetric(
        'keyplane_http_request_duration_seconds',
        'HTTP request latency by method and route',
      ) as never,
    );
    // Unmatched paths share one label so that scanners cannot blow up the series count.
    const unmatched = metrics.route('unmatched');
    app.addHook('onRoute', (route) => {
      route.config = { ...route.config, [ROUTE_METRICS]: metrics.route(route.url) } as typeof route.config;
    });
    app.addHook('onResponse', (request, reply, done) => {
      const entry = (request.routeOptions.config as { [ROUTE_METRICS]?: RouteEntry } | undefined)?.[ROUTE_METRICS];
      (entry ?? unmatched).series(request.method).record(reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  },
  { name: 'keyplane-metrics' },
);
