import { computeClaims, type ClaimName, type ClaimView } from '#lib/agents/evidence.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredAgent, StoredEnrollment } from '../storage/interface.js';

export type FleetServices = Pick<ControlPlaneServices, 'storage' | 'now'>;

/** An agent's claims now, from its proofs, its owner's approval and its evidence (docs/agents.md). */
export async function claimsOf(services: FleetServices, agent: StoredAgent): Promise<Record<ClaimName, ClaimView>> {
  const evidence = await services.storage.agents.listEvidence(agent.agentId);
  return computeClaims({
    keyProvenAt: agent.keyProvenAt,
    ownerApprovedAt: agent.ownerApprovedAt,
    evidence,
    now: services.now(),
  });
}

/** The owner's fleet with each agent's claims, and the enrollments it approved that no agent has picked up yet. */
export async function fleetOf(
  services: FleetServices,
  ownerId: string,
): Promise<{
  agents: Array<{ agent: StoredAgent; claims: Record<ClaimName, ClaimView> }>;
  pending: StoredEnrollment[];
}> {
  const agents = await services.storage.agents.listByOwner(ownerId);
  const pending = await services.storage.agents.listApprovedEnrollments(ownerId, services.now());
  return {
    agents: await Promise.all(agents.map(async (agent) => ({ agent, claims: await claimsOf(services, agent) }))),
    pending,
  };
}
