import { createHash } from 'node:crypto';
import { EVIDENCE_LIFETIME_MS } from '#lib/agents/evidence.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import type { StoredAgent } from '../storage/interface.js';
import type { AgentServices } from './enrollment.js';
import { ownedAgent } from './lifecycle.js';

export type A2aServices = AgentServices & Pick<ControlPlaneServices, 'fetcher'>;

/** Limits of a card fetch (docs/agents.md#evidence): the fetcher's SSRF rules, 128 KiB, 5 s. */
export const CARD_FETCH = { maxBytes: 131_072, timeoutMs: 5000, maxRedirects: 3 } as const;
const MAX_SKILLS = 50;

/** The skill ids of an A2A AgentCard, as declared capabilities (strings only, bounded). */
function skillIds(card: Record<string, unknown>): string[] {
  if (!Array.isArray(card.skills)) return [];
  const ids = card.skills
    .map((skill) => (typeof skill === 'object' && skill !== null ? (skill as Record<string, unknown>).id : undefined))
    .filter((id): id is string => typeof id === 'string' && id.length > 0 && id.length <= 100);
  return [...new Set(ids)].slice(0, MAX_SKILLS);
}

function parseCard(body: Buffer): Record<string, unknown> {
  let card: unknown;
  try {
    card = JSON.parse(body.toString('utf8'));
  } catch {
    throw fail('agent_card_invalid', 'the agent card is not JSON');
  }
  if (typeof card !== 'object' || card === null || Array.isArray(card))
    throw fail('agent_card_invalid', 'the agent card is not a JSON object');
  const name = (card as Record<string, unknown>).name;
  if (typeof name !== 'string' || name.length === 0) throw fail('agent_card_invalid', 'the agent card has no name');
  return card as Record<string, unknown>;
}

/**
 * `a2a-discover`: fetches the agent's A2A card through the guarded fetcher (https only, every
 * resolved address and redirect checked, 128 KiB, 5 s, no credentials), appends
 * `descriptor-integrity` evidence with the SHA-256 of the exact bytes served, and fills the
 * declared card URL and capabilities only where they are still empty. Any refusal appends nothing.
 */
export async function discoverA2aCard(
  services: A2aServices,
  session: SessionView,
  input: { agentId: string; url: string },
) {
  const agent = await ownedAgent(services, session.identityId, input.agentId);
  if (agent.state === 'revoked')
    throw fail('agent_state', 'the agent is revoked: it gathers no evidence', { fields: { state: agent.state } });
  const fetched = await services.fetcher.fetch(input.url, {
    ...CARD_FETCH,
    accept: 'application/json',
    followRedirects: true,
  });
  if (fetched.status !== 200) throw fail('fetch_failed', `the agent card URL answered ${fetched.status}`);
  const card = parseCard(fetched.body);
  const sha256 = createHash('sha256').update(fetched.body).digest('hex');
  const url = new URL(input.url).href;
  const now = services.now();
  const expiresAt = now + EVIDENCE_LIFETIME_MS['descriptor-integrity'];
  const fetchedAt = new Date(now).toISOString();
  const declared: StoredAgent['declared'] = { ...agent.declared };
  if (!declared.a2aCardUrl) declared.a2aCardUrl = url;
  if (!declared.capabilities?.length) {
    const skills = skillIds(card);
    if (skills.length > 0) declared.capabilities = skills;
  }
  const changed = JSON.stringify(declared) !== JSON.stringify(agent.declared);
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.agents.appendEvidence({
      agentId: agent.agentId,
      type: 'descriptor-integrity',
      at: now,
      expiresAt,
      detail: { url, sha256, fetched_at: fetchedAt },
    });
    // A lost race on the state only skips filling the declared facts; the evidence stands on its own.
    if (changed) await tx.agents.update({ ...agent, declared, updatedAt: now }, agent.state);
    return services.events.record(tx, {
      type: 'agent.evidence_added',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      ownerId: agent.ownerId,
      evidence: 'descriptor-integrity',
      subject: url,
    });
  });
  return {
    evidence: {
      type: 'descriptor-integrity' as const,
      url,
      sha256,
      fetched_at: fetchedAt,
      expires_at: new Date(expiresAt).toISOString(),
    },
    declared,
    ...(receipt ? { receipt } : {}),
  };
}
