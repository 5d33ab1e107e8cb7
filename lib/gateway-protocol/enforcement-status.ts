/**
 * Whether a gateway client's policy is enforced, judged from declared intent (the newest config
 * the control plane issued) and live observation (the gateways' signed evidence), kept apart
 * (docs/gateway.md#evidence). Never green without fresh evidence.
 */

export type EnforcementStatus = 'green' | 'stale' | 'unknown';

export type EnforcementReason =
  | 'no_config_declared'
  | 'no_evidence'
  | 'evidence_expired'
  | 'failing_closed'
  | 'config_mismatch'
  | 'enforcing_declared_config';

export interface ObservedConfig {
  version: number;
  hash: string;
}

export interface ObservedInstance {
  /** Milliseconds: the evidence's `exp`; after it the report is no longer fresh. */
  expiresAt: number;
  /** What the instance held when it reported, or null while it failed closed. */
  config: ObservedConfig | null;
}

/**
 * `unknown` without a declared config or without any evidence; `green` only when at least one
 * instance reported freshly and every fresh report names the hash of the declared config;
 * `stale` otherwise, with the first problem found: no fresh report, a fresh instance failing
 * closed, or a fresh instance on another config.
 */
export function computeEnforcementStatus(
  declared: { hash: string } | null,
  observed: readonly ObservedInstance[],
  now: number,
): { status: EnforcementStatus; reason: EnforcementReason } {
  if (!declared) return { status: 'unknown', reason: 'no_config_declared' };
  if (observed.length === 0) return { status: 'unknown', reason: 'no_evidence' };
  const fresh = observed.filter((report) => now < report.expiresAt);
  if (fresh.length === 0) return { status: 'stale', reason: 'evidence_expired' };
  if (fresh.some((report) => report.config === null)) return { status: 'stale', reason: 'failing_closed' };
  if (fresh.some((report) => report.config!.hash !== declared.hash))
    return { status: 'stale', reason: 'config_mismatch' };
  return { status: 'green', reason: 'enforcing_declared_config' };
}
