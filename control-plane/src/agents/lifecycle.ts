import { calculateJwkThumbprint } from 'jose';
import { meetsAssurance } from '#lib/assurance/assurance.js';
import { checkAgentJwk } from '#lib/agents/jwk.js';
import { transitionAgent, type AgentAction } from '#lib/agents/lifecycle.js';
import { generateOwnerCode, normalizeOwnerCode } from '#lib/agents/owner-code.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { foldUsername } from '#lib/accounts/username.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { SessionView } from '../context.js';
import type { AgentVisibility, StoredAgent, Stores } from '../storage/interface.js';
import type { AgentServices } from './enrollment.js';
import { checkAgentKeyProof, type KeyProofRequest } from './key-proof.js';

/** How long a transfer code is good for (docs/agents.md#key-rotation-compromise-and-transfer). */
export const TRANSFER_LIFETIME_MS = 24 * 3_600_000;
const TRANSFER_ATTEMPTS = 5;

const transferHash = (canonical: string): string => sha256Hex(`keyplane:agent-transfer-code:v1\u0000${canonical}`);

/** The agent when `ownerId` owns it; unknown and foreign ids are the same `not_found`. */
export async function ownedAgent(
  services: Pick<AgentServices, 'storage'>,
  ownerId: string,
  agentId: string,
): Promise<StoredAgent> {
  const agent = await services.storage.agents.get(agentId);
  if (!agent || agent.ownerId !== ownerId) throw fail('not_found', 'no agent of yours has this id');
  return agent;
}

function requireLevel(session: SessionView, level: 'passkey' | 'sensitive'): void {
  if (!meetsAssurance(session.assurance, level)) {
    throw fail('insufficient_assurance', `this needs a ${level} session; step up at /auth/step-up`, {
      fields: { required: level, stepUp: '/auth/step-up' },
    });
  }
}

/** Writes the new agent record if nobody changed its state meanwhile; a lost race is `agent_state`. */
async function save(tx: Stores, next: StoredAgent, from: StoredAgent['state']): Promise<void> {
  if (!(await tx.agents.update(next, from))) {
    const now = await tx.agents.get(next.agentId);
    throw fail('agent_state', `the agent is ${now?.state ?? 'gone'}: it changed while this request ran`, {
      fields: { state: now?.state ?? 'revoked' },
    });
  }
}

/** Leaving `active` stops every grant at once (and so every token issued under them). */
const stopsGrants = (to: StoredAgent['state']): boolean => to !== 'active';

/**
 * `lifecycle`: suspend, resume, mark_compromised, revoke, as the transition table allows. A
 * resume after a transfer or a compromise recovery needs the owner at `sensitive` together with
 * a DPoP proof by the (new) agent key: both parties co-sign the return to service.
 */
export async function changeAgentState(
  services: AgentServices,
  session: SessionView,
  input: { agentId: string; action: Exclude<AgentAction, 'transfer_begin' | 'transfer_accept' | 'rotate_key'> },
  dpop: KeyProofRequest,
): Promise<{ state: StoredAgent['state']; receipt?: string }> {
  const agent = await ownedAgent(services, session.identityId, input.agentId);
  const to = transitionAgent(agent.state, input.action);
  let keyProvenAt = agent.keyProvenAt;
  if (input.action === 'resume') {
    requireLevel(session, agent.resumeNeedsKey ? 'sensitive' : 'passkey');
    if (agent.resumeNeedsKey) {
      await checkAgentKeyProof(services, dpop, agent.jkt);
      keyProvenAt = services.now();
    }
  }
  const now = services.now();
  const next: StoredAgent = {
    ...agent,
    state: to,
    resumeNeedsKey: to === 'active' ? false : agent.resumeNeedsKey,
    keyProvenAt,
    updatedAt: now,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await save(tx, next, agent.state);
    const grantsRevoked = stopsGrants(to) ? await tx.agents.revokeGrants(agent.agentId, now) : 0;
    if (to === 'revoked' || to === 'compromised') await tx.agents.deleteTransfer(agent.agentId);
    return services.events.record(tx, {
      type: 'agent.state_changed',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      action: input.action,
      from: agent.state,
      to,
      grantsRevoked,
    });
  });
  return { state: to, ...(receipt ? { receipt } : {}) };
}

/**
 * `key-rotate`: a new public key. Normal rotation (active or suspended) is proven by a DPoP
 * proof of the current key; a compromised agent's current key proves nothing, so the owner's
 * step-up (`sensitive`) stands in for it, and the agent comes back `suspended`, to be resumed
 * by owner and new key together.
 */
export async function rotateAgentKey(
  services: AgentServices,
  session: SessionView,
  input: { agentId: string; publicJwk: unknown },
  dpop: KeyProofRequest,
): Promise<{ state: StoredAgent['state']; jkt: string; receipt?: string }> {
  const agent = await ownedAgent(services, session.identityId, input.agentId);
  const to = transitionAgent(agent.state, 'rotate_key');
  const { jwk, alg } = checkAgentJwk(input.publicJwk);
  const jkt = await calculateJwkThumbprint(jwk, 'sha256');
  if (jkt === agent.jkt) throw fail('invalid_request', 'the new key is the current key');
  if (agent.state === 'compromised') requireLevel(session, 'sensitive');
  else await checkAgentKeyProof(services, dpop, agent.jkt);
  const now = services.now();
  const recovering = agent.state === 'compromised';
  const next: StoredAgent = {
    ...agent,
    publicJwk: jwk,
    alg,
    jkt,
    state: to,
    resumeNeedsKey: agent.resumeNeedsKey || recovering,
    keyProvenAt: recovering ? null : now,
    updatedAt: now,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await save(tx, next, agent.state);
    return services.events.record(tx, {
      type: 'agent.key_rotated',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      jkt,
      previousJkt: agent.jkt,
      from: agent.state,
      to,
    });
  });
  return { state: to, jkt, ...(receipt ? { receipt } : {}) };
}

/** `transfer/begin`: suspends the agent and returns a short code for one named target owner. */
export async function beginTransfer(
  services: AgentServices,
  session: SessionView,
  input: { agentId: string; to: string },
): Promise<{ transferCode: string; expiresAt: number; receipt?: string }> {
  requireLevel(session, 'passkey');
  const agent = await ownedAgent(services, session.identityId, input.agentId);
  const target =
    (await services.storage.identities.get(input.to)) ??
    (await services.storage.identities.findByUsername(foldUsername(input.to)));
  if (!target) throw fail('not_found', 'no account has this username or id');
  if (target.identityId === agent.ownerId) throw fail('invalid_request', 'the agent is yours already');
  const to = transitionAgent(agent.state, 'transfer_begin');
  const now = services.now();
  const code = generateOwnerCode();
  const expiresAt = now + TRANSFER_LIFETIME_MS;
  const { receipt } = await services.storage.transaction(async (tx) => {
    await save(tx, { ...agent, state: to, updatedAt: now }, agent.state);
    await tx.agents.revokeGrants(agent.agentId, now);
    await tx.agents.putTransfer({
      agentId: agent.agentId,
      fromOwnerId: agent.ownerId,
      toIdentityId: target.identityId,
      codeHash: transferHash(code),
      createdAt: now,
      expiresAt,
    });
    return services.events.record(tx, {
      type: 'agent.transfer_begun',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      toIdentityId: target.identityId,
      from: agent.state,
    });
  });
  return { transferCode: code, expiresAt, ...(receipt ? { receipt } : {}) };
}

/**
 * `transfer/accept` by the named owner with a fresh key. The agent changes hands and keys but
 * stays suspended until its new owner (at `sensitive`) and the new key resume it together.
 * A wrong code, someone else, or an expired transfer: one `transfer_unknown`, nothing changes.
 */
export async function acceptTransfer(
  services: AgentServices,
  session: SessionView,
  input: { agentId: string; transferCode: string; publicJwk: unknown },
): Promise<{ state: StoredAgent['state']; jkt: string; receipt?: string }> {
  requireLevel(session, 'passkey');
  const refused = () => fail('transfer_unknown', 'no transfer of this agent to you matches this code');
  const attempts = await services.state.incrWithTtl(
    `agents:transfer:${input.agentId}:${session.identityId}`,
    TRANSFER_LIFETIME_MS,
  );
  if (attempts.count > TRANSFER_ATTEMPTS) throw refused();
  const { jwk, alg } = checkAgentJwk(input.publicJwk);
  const jkt = await calculateJwkThumbprint(jwk, 'sha256');
  const canonical = normalizeOwnerCode(input.transferCode);
  const agent = await services.storage.agents.get(input.agentId);
  const transfer = agent ? await services.storage.agents.getTransfer(agent.agentId) : null;
  if (!agent || !transfer || canonical === null || transfer.toIdentityId !== session.identityId) throw refused();
  const to = transitionAgent(agent.state, 'transfer_accept');
  if (jkt === agent.jkt) throw fail('invalid_request', 'a transfer needs a fresh key, not the current one');
  const now = services.now();
  const next: StoredAgent = {
    ...agent,
    ownerId: session.identityId,
    publicJwk: jwk,
    alg,
    jkt,
    state: to,
    resumeNeedsKey: true,
    keyProvenAt: null,
    ownerApprovedAt: now,
    updatedAt: now,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    if (!(await tx.agents.consumeTransfer(agent.agentId, transferHash(canonical), session.identityId, now)))
      throw refused();
    await save(tx, next, agent.state);
    const grantsRevoked = await tx.agents.revokeGrants(agent.agentId, now);
    return services.events.record(tx, {
      type: 'agent.transfer_accepted',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: session.identityId,
      previousOwnerId: agent.ownerId,
      jkt,
      grantsRevoked,
    });
  });
  return { state: to, jkt, ...(receipt ? { receipt } : {}) };
}

/** `visibility`: private, unlisted or public; needs `sensitive`, since it publishes the profile. */
export async function setAgentVisibility(
  services: AgentServices,
  session: SessionView,
  input: { agentId: string; visibility: AgentVisibility },
): Promise<{ visibility: AgentVisibility; receipt?: string }> {
  requireLevel(session, 'sensitive');
  const agent = await ownedAgent(services, session.identityId, input.agentId);
  if (agent.state === 'revoked')
    throw fail('agent_state', 'the agent is revoked: its profile can no longer change', {
      fields: { state: agent.state },
    });
  const now = services.now();
  const { receipt } = await services.storage.transaction(async (tx) => {
    await save(tx, { ...agent, visibility: input.visibility, updatedAt: now }, agent.state);
    return services.events.record(tx, {
      type: 'agent.visibility_changed',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      visibility: input.visibility,
    });
  });
  return { visibility: input.visibility, ...(receipt ? { receipt } : {}) };
}
