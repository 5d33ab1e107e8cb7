import { Registry } from 'prom-client';
import t from 'tap';
import { RouteMetrics } from '#lib/metrics/route-metrics.js';

function registryWith(metrics: RouteMetrics): Registry {
  const registry = new Registry();
  registry.registerMetric(metrics.requestsMetric('http_requests_total', 'requests') as never);
  registry.registerMetric(metrics.latencyMetric('http_request_duration_seconds', 'latency') as never);
  return registry;
}

t.test('requests are counted by method, route and status, in the exposition format', async (t) => {
  const metrics = new RouteMetrics([0.01, 0.1]);
  const registry = registryWith(metrics);
  const health = metrics.route('/healthz');
  t.equal(metrics.route('/healthz'), health, 'one entry per route pattern');
  health.series('GET').record(200, 0.002);
  health.series('GET').record(200, 0.05);
  health.series('GET').record(503, 0.5);
  health.series('HEAD').record(200, 0.01);
  const text = await registry.metrics();
  t.match(text, '# TYPE http_requests_total counter');
  t.match(text, 'http_requests_total{method="GET",route="/healthz",status="200"} 2\n');
  t.match(text, 'http_requests_total{method="GET",route="/healthz",status="503"} 1\n');
  t.match(text, 'http_requests_total{method="HEAD",route="/healthz",status="200"} 1\n');
  t.match(text, '# TYPE http_request_duration_seconds histogram');
  // Cumulative buckets; a value equal to a bound counts in that bound's bucket.
  t.match(text, 'http_request_duration_seconds_bucket{method="GET",route="/healthz",le="0.01"} 1\n');
  t.match(text, 'http_request_duration_seconds_bucket{method="GET",route="/healthz",le="0.1"} 2\n');
  t.match(text, 'http_request_duration_seconds_bucket{method="GET",route="/healthz",le="+Inf"} 3\n');
  t.match(text, 'http_request_duration_seconds_count{method="GET",route="/healthz"} 3\n');
  t.match(text, 'http_request_duration_seconds_sum{method="GET",route="/healthz"} 0.552\n');
  t.match(text, 'http_request_duration_seconds_bucket{method="HEAD",route="/healthz",le="0.01"} 1\n');
});

t.test('a route never asked has no series; labels with quotes are escaped by the registry', async (t) => {
  const metrics = new RouteMetrics([1]);
  const registry = registryWith(metrics);
  metrics.route('/never');
  metrics.route('/a"b').series('GET').record(404, 0.1);
  const text = await registry.metrics();
  t.notMatch(text, '/never');
  t.match(text, 'route="/a\\"b"');
});

t.test('resetting the registry empties every series', async (t) => {
  const metrics = new RouteMetrics([1]);
  const registry = registryWith(metrics);
  metrics.route('/x').series('POST').record(201, 0.2);
  registry.resetMetrics();
  const json = await registry.getMetricsAsJSON();
  t.same(
    json.map((metric) => [metric.name, metric.values.length]),
    [
      ['http_requests_total', 0],
      ['http_request_duration_seconds', 0],
    ],
  );
  metrics.route('/x').series('POST').record(201, 0.2);
  t.match(await registry.metrics(), 'http_requests_total{method="POST",route="/x",status="201"} 1');
});
