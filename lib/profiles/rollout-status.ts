import { computeEnforcementStatus, type ObservedInstance } from '../gateway-protocol/enforcement-status.js';
import type { GatewayMode } from '../gateway-protocol/policy.js';

/**
 * The rollout truth of one project (docs/rollout.md#status): declared intent (profile, policy
 * mode) and live observation (the gateways' signed evidence) judged together, never green by
 * default. `enforced` needs a declared `enforce` policy and fresh evidence from every reporting
 * instance naming exactly that config; everything else says why it is not.
 */

export type RolloutStatus = 'enforced' | 'unverified' | 'stale' | 'mismatch';

export type RolloutReason =
  | 'not_registered' // no client bound to the project yet
  | 'no_gateway' // the client has no gateway policy, so nothing can be observed
  | 'no_evidence' // no gateway has reported
  | 'evidence_expired' // reports exist, none is fresh
  | 'failing_closed' // a fresh report holds no config
  | 'config_mismatch' // a fresh report holds another config than the declared one
  | 'observing' // fresh and matching, but the policy only observes
  | 'canary' // fresh and matching, enforced for a share of sessions only
  | 'enforcing_declared_config';

export interface RolloutFacts {
  registered: boolean;
  /** The config the control plane issues now, or null without a gateway policy. */
  declared: { hash: string; mode: GatewayMode } | null;
  observed: readonly ObservedInstance[];
  now: number;
}

export function computeRolloutStatus(facts: RolloutFacts): { status: RolloutStatus; reason: RolloutReason } {
  if (!facts.registered) return { status: 'unverified', reason: 'not_registered' };
  if (!facts.declared) return { status: 'unverified', reason: 'no_gateway' };
  const enforcement = computeEnforcementStatus(facts.declared, facts.observed, facts.now);
  switch (enforcement.reason) {
    case 'no_config_declared':
      return { status: 'unverified', reason: 'no_gateway' };
    case 'no_evidence':
      return { status: 'unverified', reason: 'no_evidence' };
    case 'evidence_expired':
      return { status: 'stale', reason: 'evidence_expired' };
    case 'failing_closed':
      return { status: 'mismatch', reason: 'failing_closed' };
    case 'config_mismatch':
      return { status: 'mismatch', reason: 'config_mismatch' };
    case 'enforcing_declared_config':
      if (facts.declared.mode === 'observe') return { status: 'unverified', reason: 'observing' };
      if (facts.declared.mode === 'canary') return { status: 'unverified', reason: 'canary' };
      return { status: 'enforced', reason: 'enforcing_declared_config' };
  }
}

/** Whether the evidence alone is fresh and matches the declared config (what `verify` and `attest` require). */
export function evidenceMatches(facts: RolloutFacts): boolean {
  if (!facts.declared) return false;
  return computeEnforcementStatus(facts.declared, facts.observed, facts.now).status === 'green';
}
