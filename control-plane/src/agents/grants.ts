import { fail } from '#lib/errors/keyplane-error.js';
import { checkResource } from '#lib/oauth/resource.js';
import { requestableResources } from '../oidc/mcp-resources.js';
import { formatScope, parseScope } from '#lib/oauth/scope.js';
import { randomId } from '#lib/crypto/random.js';
import type { SessionView } from '../context.js';
import type { Actor } from '../events/types.js';
import type { StoredAgent, StoredAgentGrant } from '../storage/interface.js';
import type { AgentServices } from './enrollment.js';
import { ownedAgent } from './lifecycle.js';

interface GrantRequest {
  agentId: string;
  clientId: string;
  resource?: string;
  scope: string;
}

/**
 * `POST /auth/agents/proof/grants`: the owner (at `sensitive`) approves one scoped runtime
 * credential for an active agent at one client: the client must declare agent access, the
 * resource must be one the client registered, the scope within the client's.
 */
export async function approveAgentGrant(
  services: AgentServices,
  session: SessionView,
  input: GrantRequest,
): Promise<{ grantId: string; receipt?: string }> {
  if (session.assurance !== 'sensitive')
    throw fail(
      'insufficient_assurance',
      'approving an agent grant needs a sensitive session; step up at /auth/step-up',
      { fields: { required: 'sensitive', stepUp: '/auth/step-up' } },
    );
  return insertAgentGrant(services, await ownedAgent(services, session.identityId, input.agentId), input, 'owner');
}

/**
 * `POST /admin/agents/{agent_id}/grants` (`keyplane agent grant`): the operator, with the admin
 * token, approves the same grant on the owner's behalf (a shell has no passkey session); the
 * receipt says the operator approved it.
 */
export async function approveAgentGrantAsOperator(
  services: AgentServices,
  input: GrantRequest,
): Promise<{ grantId: string; receipt?: string }> {
  const agent = await services.storage.agents.get(input.agentId);
  if (!agent) throw fail('not_found', 'no agent has this id');
  return insertAgentGrant(services, agent, input, 'operator');
}

async function insertAgentGrant(
  services: AgentServices,
  agent: StoredAgent,
  input: GrantRequest,
  approvedBy: 'owner' | 'operator',
): Promise<{ grantId: string; receipt?: string }> {
  if (agent.state !== 'active')
    throw fail('agent_state', `the agent is ${agent.state}: only an active agent gets grants`, {
      fields: { state: agent.state },
    });
  const client = await services.storage.clients.get(input.clientId);
  if (!client) throw fail('not_found', 'no client has this id');
  if (!client.metadata.access.agents)
    throw fail('forbidden', 'this client does not admit agents (its access declaration says humans only)');
  const resource = checkResource(await requestableResources(services, client, input.resource), input.resource) ?? null;
  const registered = parseScope(client.metadata.scope);
  const scopes = parseScope(input.scope);
  const extra = scopes.find((s) => !registered.includes(s) || s === 'openid' || s === 'offline_access');
  if (scopes.length === 0 || extra !== undefined)
    throw fail('invalid_scope', `scope ${extra ?? ''} is not one this client registered for agents`.trim());
  const now = services.now();
  const grant: StoredAgentGrant = {
    grantId: randomId('agg'),
    agentId: agent.agentId,
    ownerId: agent.ownerId,
    clientId: client.clientId,
    resource,
    scope: formatScope(scopes),
    createdAt: now,
    revokedAt: null,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.agents.insertGrant(grant);
    return services.events.record(tx, {
      type: 'agent.grant_approved',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      grantId: grant.grantId,
      clientId: client.clientId,
      resource,
      scope: grant.scope,
      approvedBy,
    });
  });
  return { grantId: grant.grantId, ...(receipt ? { receipt } : {}) };
}

/** The agent's grants that still stand, newest first, for its owner's page. */
export async function liveGrantsOf(
  services: Pick<AgentServices, 'storage'>,
  agentId: string,
): Promise<StoredAgentGrant[]> {
  const grants = await services.storage.agents.listGrants(agentId);
  return grants.filter((grant) => grant.revokedAt === null).sort((a, b) => b.createdAt - a.createdAt);
}

/** `POST /auth/agents/proof/grants/revoke`: the owner ends one grant and every token issued under it. */
export async function revokeAgentGrant(
  services: AgentServices,
  session: SessionView,
  grantId: string,
): Promise<{ receipt?: string }> {
  const grant = await services.storage.agents.getGrant(grantId);
  if (!grant || grant.ownerId !== session.identityId) throw fail('not_found', 'no grant of yours has this id');
  return endAgentGrant(services, grant);
}

/** The operator ends any agent's grant (the console, docs/console.md); the receipt names who acted. */
export async function revokeAgentGrantAsOperator(
  services: AgentServices,
  grantId: string,
  actor: Actor,
): Promise<{ receipt?: string }> {
  const grant = await services.storage.agents.getGrant(grantId);
  if (!grant) throw fail('not_found', 'no grant has this id');
  return endAgentGrant(services, grant, actor);
}

async function endAgentGrant(
  services: AgentServices,
  grant: StoredAgentGrant,
  actor?: Actor,
): Promise<{ receipt?: string }> {
  const now = services.now();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.agents.revokeGrant(grant.grantId, now))) throw fail('conflict', 'the grant was revoked already');
    return services.events.record(tx, {
      type: 'agent.grant_revoked',
      at: now,
      outcome: 'success',
      ...(actor ? { actor } : {}),
      agentId: grant.agentId,
      ownerId: grant.ownerId,
      grantId: grant.grantId,
    });
  });
}

/**
 * Whether an access token issued under an agent grant still stands: the grant is live, for this
 * client, and the agent is active with the key the token is bound to. Suspension, compromise,
 * revocation, transfer and key rotation all end it at once.
 */
export async function agentGrantStands(
  services: Pick<AgentServices, 'storage'>,
  grantId: string,
  clientId: string,
  jkt: string | undefined,
): Promise<boolean> {
  const grant = await services.storage.agents.getGrant(grantId);
  if (!grant || grant.revokedAt !== null || grant.clientId !== clientId) return false;
  const agent = await services.storage.agents.get(grant.agentId);
  return agent !== null && agent.state === 'active' && agent.ownerId === grant.ownerId && agent.jkt === jkt;
}
