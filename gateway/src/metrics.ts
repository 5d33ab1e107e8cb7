import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The gateway's own registry (never the global one, so tests and several gateways in one process never clash). */
export function createGatewayMetrics(configVersion: () => number) {
  const registry = new Registry();
  return {
    registry,
    requests: new Counter({
      name: 'kp_gate_requests_total',
      help: 'Requests handled, by outcome (allowed, refused, observed, upstream_failed, internal); a request is counted allowed only once the upstream answered.',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    refusals: new Counter({
      name: 'kp_gate_refusals_total',
      help: 'Requests refused, by reason.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    upstreamFailures: new Counter({
      name: 'kp_gate_upstream_failures_total',
      help: 'Requests the policy let through that the upstream failed, by reason (upstream_unavailable, upstream_timeout, upstream_busy).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    toolRefusals: new Counter({
      name: 'kp_gate_tool_refusals_total',
      help: 'MCP tool calls refused by the rules per tool, by tool and reason (tools named in the policy only).',
      labelNames: ['tool', 'reason'] as const,
      registers: [registry],
    }),
    observed: new Counter({
      name: 'kp_gate_observed_refusals_total',
      help: 'Requests passed through that the policy would refuse (observe and canary modes), by reason.',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    upstreamSeconds: new Histogram({
      name: 'kp_gate_upstream_duration_seconds',
      help: 'Time from sending a request upstream to its response headers.',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    refreshes: new Counter({
      name: 'kp_gate_session_refreshes_total',
      help: "Session refreshes, by outcome (refreshed: this request ran it; joined: it waited for another's; signed_out; retry).",
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    configPulls: new Counter({
      name: 'kp_gate_config_pulls_total',
      help: 'Pulls of the signed config from the control plane, by outcome (installed, unchanged, refused, unavailable).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    evidencePushes: new Counter({
      name: 'kp_gate_evidence_pushes_total',
      help: 'Signed evidence reports pushed to the control plane, by outcome (accepted, refused, unavailable).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    dependencyErrors: new Counter({
      name: 'kp_dependency_errors_total',
      help: 'Calls to a dependency that failed as an outage (refused, reset, timed out, failing over), by dependency (redis, control_plane).',
      labelNames: ['dependency'] as const,
      registers: [registry],
    }),
    configVersion: new Gauge({
      name: 'kp_gate_config_version',
      help: 'Version of the signed config in force (0: none, the gateway fails closed).',
      registers: [registry],
      collect() {
        this.set(configVersion());
      },
    }),
  };
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
