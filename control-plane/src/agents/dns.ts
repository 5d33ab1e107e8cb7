import { createHmac } from 'node:crypto';
import { EVIDENCE_LIFETIME_MS } from '#lib/agents/evidence.js';
import { hasTxtRecord } from '#lib/dns/txt-lookup.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { SessionView } from '../context.js';
import type { AgentServices } from './enrollment.js';
import { ownedAgent } from './lifecycle.js';

const DOMAIN = /^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$/;

function checkDomain(input: string): string {
  const domain = input.trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN.test(domain)) throw fail('invalid_request', 'domain must be a DNS name such as agents.example.com');
  return domain;
}

/**
 * The TXT value for one agent and domain: an HMAC under a key derived from the master key, so
 * it is the same on every call and replica, unguessable, and never valid for another agent.
 */
function recordValue(services: AgentServices, agentId: string, domain: string): string {
  const token = createHmac('sha256', services.secrets.macKey('agent-dns'))
    .update(`${agentId}\u0000${domain}`)
    .digest('hex')
    .slice(0, 40);
  return `svc-agent=${token}`;
}

/** `dns-challenge`: the record to publish at `_svc-agent.<domain>`. */
export async function dnsChallenge(
  services: AgentServices,
  session: SessionView,
  input: { agentId: string; domain: string },
) {
  const agent = await ownedAgent(services, session.identityId, input.agentId);
  const domain = checkDomain(input.domain);
  return { name: `_svc-agent.${domain}`, type: 'TXT' as const, value: recordValue(services, agent.agentId, domain) };
}

/** `dns-verify`: on a matching TXT record, appends domain-control evidence (30 days). */
export async function dnsVerify(
  services: AgentServices,
  session: SessionView,
  input: { agentId: string; domain: string },
) {
  const agent = await ownedAgent(services, session.identityId, input.agentId);
  if (agent.state === 'revoked')
    throw fail('agent_state', 'the agent is revoked: it gathers no evidence', { fields: { state: agent.state } });
  const domain = checkDomain(input.domain);
  const found = await hasTxtRecord(`_svc-agent.${domain}`, recordValue(services, agent.agentId, domain), {
    resolvers: services.config.dns.resolvers,
  });
  if (!found) throw fail('dns_record_missing', `no TXT record at _svc-agent.${domain} carries this agent's value`);
  const now = services.now();
  const expiresAt = now + EVIDENCE_LIFETIME_MS['domain-control'];
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.agents.appendEvidence({
      agentId: agent.agentId,
      type: 'domain-control',
      at: now,
      expiresAt,
      detail: { domain },
    });
    return services.events.record(tx, {
      type: 'agent.evidence_added',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      evidence: 'domain-control',
      subject: domain,
    });
  });
  return {
    evidence: {
      type: 'domain-control' as const,
      domain,
      verified_at: new Date(now).toISOString(),
      expires_at: new Date(expiresAt).toISOString(),
    },
    ...(receipt ? { receipt } : {}),
  };
}
