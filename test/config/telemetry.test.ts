import t from 'tap';
import { ConfigError, loadControlPlaneConfig, loadGatewayConfig } from '#config/load.js';

const problems = (load: () => unknown): string[] => {
  try {
    load();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

t.test('telemetry is off by default, and each service names itself', async (t) => {
  const cp = loadControlPlaneConfig({ env: {} });
  const gw = loadGatewayConfig({ env: {} });
  t.same(cp.telemetry, { otlp: {}, service_name: 'keyplane-control-plane', sample_ratio: 1 });
  t.same(gw.telemetry, { otlp: {}, service_name: 'keyplane-gateway', sample_ratio: 1 });
});

t.test('the standard OTEL_* variables set it, and YAML-shaped overrides too', async (t) => {
  const env = {
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=abc%3D%3D, x-tenant = ops',
    OTEL_TRACES_SAMPLER_ARG: '0.25',
  };
  for (const config of [loadControlPlaneConfig({ env }), loadGatewayConfig({ env })])
    t.same(config.telemetry.otlp, {
      endpoint: 'http://collector:4318',
      headers: { 'x-api-key': 'abc==', 'x-tenant': 'ops' },
    });
  t.equal(loadGatewayConfig({ env }).telemetry.sample_ratio, 0.25);
  const given = loadGatewayConfig({
    env: {},
    overrides: {
      telemetry: { otlp: { endpoint: 'https://otlp.example', headers: { a: 'b' } }, service_name: 'edge-eu' },
    },
  });
  t.same(given.telemetry, {
    otlp: { endpoint: 'https://otlp.example', headers: { a: 'b' } },
    service_name: 'edge-eu',
    sample_ratio: 1,
  });
});

t.test('a bad telemetry setting stops the service with its key named', async (t) => {
  t.match(
    problems(() => loadControlPlaneConfig({ env: { OTEL_EXPORTER_OTLP_HEADERS: '=nameless' } })),
    [/OTEL_EXPORTER_OTLP_HEADERS must be object/],
  );
  t.match(
    problems(() => loadControlPlaneConfig({ env: { OTEL_TRACES_SAMPLER_ARG: 'half' } })),
    [/OTEL_TRACES_SAMPLER_ARG must be number/],
  );
  t.match(
    problems(() => loadGatewayConfig({ env: { OTEL_TRACES_SAMPLER_ARG: '2' } })),
    [/telemetry.sample_ratio must be <= 1/],
  );
  t.match(
    problems(() => loadGatewayConfig({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' } })),
    [/telemetry.otlp.endpoint is not a valid/],
  );
  t.match(
    problems(() => loadGatewayConfig({ env: {}, overrides: { telemetry: { otlp: { headers: { a: 1 } } } } })),
    [/telemetry.otlp.headers.a must be string/],
  );
});
