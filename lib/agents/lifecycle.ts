import { fail } from '../errors/keyplane-error.js';

/** Agent states (docs/agents.md#states); `revoked` is terminal. */
export const AGENT_STATES = ['active', 'suspended', 'compromised', 'revoked'] as const;
export type AgentState = (typeof AGENT_STATES)[number];

/** Everything that can move an agent between states. */
export type AgentAction =
  'suspend' | 'resume' | 'mark_compromised' | 'revoke' | 'transfer_begin' | 'transfer_accept' | 'rotate_key';

/**
 * The lifecycle as a table: for each action, the states it may start from and where it leads.
 * The public state table lists the transitions from `active`; revoking or marking compromised
 * is also allowed from `suspended` (and revoking from `compromised`), because an owner must be
 * able to end an agent whatever it is doing (docs/agents.md#states).
 */
export const AGENT_TRANSITIONS: Readonly<Record<AgentAction, Readonly<Partial<Record<AgentState, AgentState>>>>> = {
  suspend: { active: 'suspended' },
  resume: { suspended: 'active' },
  mark_compromised: { active: 'compromised', suspended: 'compromised' },
  revoke: { active: 'revoked', suspended: 'revoked', compromised: 'revoked' },
  transfer_begin: { active: 'suspended' },
  transfer_accept: { suspended: 'suspended' },
  // Compromise recovery: the new key arrives first, the agent stays suspended until resumed.
  rotate_key: { active: 'active', suspended: 'suspended', compromised: 'suspended' },
};

/** The state `action` leads to from `state`, or null when the table has no such transition. */
export function nextAgentState(state: AgentState, action: AgentAction): AgentState | null {
  return AGENT_TRANSITIONS[action][state] ?? null;
}

/** Like `nextAgentState`, but refuses an illegal transition with `agent_state`, naming the current state. */
export function transitionAgent(state: AgentState, action: AgentAction): AgentState {
  const next = nextAgentState(state, action);
  if (next === null) {
    const allowed = Object.keys(AGENT_TRANSITIONS[action]).join(', ');
    throw fail('agent_state', `the agent is ${state}: ${action.replace('_', ' ')} is allowed only from ${allowed}`, {
      fields: { state },
    });
  }
  return next;
}

export const ENROLLMENT_STATES = ['pending_approval', 'approved', 'completed', 'expired'] as const;
export type EnrollmentState = (typeof ENROLLMENT_STATES)[number];

/** An enrollment lives 15 minutes from begin, unapproved or uncompleted. */
export const ENROLLMENT_LIFETIME_MS = 15 * 60_000;

/** The state an enrollment shows at `now`: a stored pending or approved one past its expiry reads `expired`. */
export function enrollmentState(stored: { state: EnrollmentState; expiresAt: number }, now: number): EnrollmentState {
  if ((stored.state === 'pending_approval' || stored.state === 'approved') && now >= stored.expiresAt) return 'expired';
  return stored.state;
}
