import { computeClaims, type EvidenceEntry } from '#lib/agents/evidence.js';
import { runProofHash, verifyRunProof } from '#lib/agents/run-proof.js';
import { signJwt } from '#lib/crypto/jwt.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { StoredAgent, StoredAgentEvidence } from '../storage/interface.js';
import type { AgentServices } from './enrollment.js';
import { agentKeyCache, checkAgentKeyProof, type KeyProofRequest } from './key-proof.js';

/** A challenge lives 60 s and is taken once. */
export const CHALLENGE_LIFETIME_MS = 60_000;
/** Proof and run tokens live 5 minutes at most. */
export const PROOF_TOKEN_LIFETIME_S = 300;
/** How precisely the last proof time is kept (the pages show it to the minute). */
export const LAST_PROOF_RESOLUTION_MS = 60_000;
/** The W3C VC of a Proof Link is re-signed on every read and valid for a day. */
const VC_LIFETIME_MS = 86_400_000;

const notFound = () => fail('not_found', 'no public agent profile has this id');

/** The agent behind a Proof Link; private and unknown ids are one and the same 404. */
export async function visibleAgent(services: Pick<AgentServices, 'storage'>, proofId: string): Promise<StoredAgent> {
  const agent = await services.storage.agents.getByProofId(proofId);
  if (!agent || agent.visibility === 'private') throw notFound();
  return agent;
}

const toEntry = (e: StoredAgentEvidence): EvidenceEntry => ({
  type: e.type,
  at: e.at,
  expiresAt: e.expiresAt,
  detail: e.detail,
});

/** The machine proof vector of `/agent/{proof_id}.json`: claims, evidence, a W3C VC 2.0 as `vc+jwt`, and the A2A card projection. */
export async function proofVector(services: AgentServices, agent: StoredAgent) {
  const now = services.now();
  const evidence = (await services.storage.agents.listEvidence(agent.agentId)).map(toEntry);
  const claims = computeClaims({
    keyProvenAt: agent.keyProvenAt,
    ownerApprovedAt: agent.ownerApprovedAt,
    evidence,
    now,
  });
  const proofUrl = `${services.config.issuer}/agent/${agent.proofId}`;
  const key = services.keys.current();
  // VC Data Model 2.0 secured with VC-JOSE-COSE §3.1.1: the credential is the claim set; no `vc` claim.
  const credential = {
    '@context': ['https://www.w3.org/ns/credentials/v2'],
    type: ['VerifiableCredential', 'AgentIdentityCredential'],
    id: `${proofUrl}#vc`,
    issuer: services.config.issuer,
    validFrom: new Date(now).toISOString(),
    validUntil: new Date(now + VC_LIFETIME_MS).toISOString(),
    credentialSubject: {
      id: proofUrl,
      name: agent.name,
      subjectKind: agent.subjectKind,
      state: agent.state,
      jkt: agent.jkt,
      claims,
    },
    iss: services.config.issuer,
    iat: Math.floor(now / 1000),
    exp: Math.floor((now + VC_LIFETIME_MS) / 1000),
  };
  const vc = signJwt({ typ: 'vc+jwt', cty: 'vc', kid: key.kid }, credential, key.keyObject ?? key.privateKey, 'ES256');
  return {
    proof_id: agent.proofId,
    name: agent.name,
    subjectKind: agent.subjectKind,
    state: agent.state,
    publicJwk: agent.publicJwk,
    jkt: agent.jkt,
    claims,
    evidence: evidence.map((e) => ({
      type: e.type,
      ...e.detail,
      verified_at: new Date(e.at).toISOString(),
      expires_at: new Date(e.expiresAt).toISOString(),
    })),
    vc,
    // A2A v1.0 AgentCard fields this record can speak for; an agent's own card stays authoritative.
    a2a: {
      name: agent.name,
      description: `${agent.subjectKind} agent with a Keyplane Proof Link`,
      version: '1.0',
      supportedInterfaces: agent.declared.a2aCardUrl
        ? [{ url: agent.declared.a2aCardUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }]
        : [],
      capabilities: {},
      defaultInputModes: ['application/json'],
      defaultOutputModes: ['application/json'],
      skills: (agent.declared.capabilities ?? []).map((c) => ({ id: c, name: c, description: c, tags: [] })),
      provider: { url: services.config.issuer, organization: 'Keyplane' },
      documentationUrl: proofUrl,
    },
  };
}

interface StoredChallenge {
  agentId: string;
  nonce: string;
  purpose: 'verify' | 'run';
  /** Checked against the control plane's clock as well as kept as the entry's TTL (ms). */
  expiresAt: number;
}

/** `challenge`: a one-use nonce for a visible, active agent. */
export async function issueChallenge(
  services: AgentServices,
  input: { proofId: string; purpose: 'verify' | 'run' },
): Promise<{ challengeId: string; nonce: string; expiresAt: number }> {
  const agent = await visibleAgent(services, input.proofId);
  if (agent.state !== 'active')
    throw fail('agent_state', `the agent is ${agent.state}: it cannot prove itself now`, {
      fields: { state: agent.state },
    });
  const challengeId = randomId('apc');
  const nonce = randomToken(24);
  const expiresAt = services.now() + CHALLENGE_LIFETIME_MS;
  const stored: StoredChallenge = { agentId: agent.agentId, nonce, purpose: input.purpose, expiresAt };
  await services.state.set(`agents:challenge:${challengeId}`, JSON.stringify(stored), CHALLENGE_LIFETIME_MS);
  return { challengeId, nonce, expiresAt };
}

export interface ProveInput {
  proofId: string;
  challengeId: string;
  audience?: string;
  runProof?: unknown;
}

/**
 * `verify` and `run`: the challenge is taken (one use, whatever follows), then the agent's
 * current key must sign a DPoP proof whose `nonce` is the challenge's. A run also binds a
 * commitment-only run proof. One signature check and one signature per call.
 */
export async function proveAgent(
  services: AgentServices,
  purpose: 'verify' | 'run',
  input: ProveInput,
  dpop: KeyProofRequest,
): Promise<{ token: string; expiresIn: number }> {
  const agent = await visibleAgent(services, input.proofId);
  const raw = await services.state.take(`agents:challenge:${input.challengeId}`);
  const challenge = raw === null ? null : (JSON.parse(raw) as StoredChallenge);
  if (
    !challenge ||
    challenge.agentId !== agent.agentId ||
    challenge.purpose !== purpose ||
    services.now() >= challenge.expiresAt
  ) {
    throw fail(
      'challenge_unknown',
      `the challenge is unknown, expired, used already, or not a ${purpose} challenge for this agent`,
    );
  }
  if (agent.state !== 'active')
    throw fail('agent_state', `the agent is ${agent.state}: it cannot prove itself now`, {
      fields: { state: agent.state },
    });
  await checkAgentKeyProof(services, dpop, agent.jkt, { nonce: challenge.nonce });
  const runHash =
    purpose === 'run'
      ? runProofHash(
          await verifyRunProof(input.runProof, {
            agentId: agent.agentId,
            challengeId: input.challengeId,
            jwk: agent.publicJwk,
            alg: agent.alg,
            importKey: async (jwk, alg) => (await agentKeyCache.resolve(jwk, alg)).key,
          }),
        )
      : undefined;
  const now = services.now();
  const key = services.keys.current();
  const iat = Math.floor(now / 1000);
  const token = signJwt(
    { kid: key.kid, typ: purpose === 'run' ? 'agent-run+jwt' : 'agent-proof+jwt' },
    {
      iss: services.config.issuer,
      sub: agent.agentId,
      aud: input.audience ?? services.config.issuer,
      iat,
      exp: iat + PROOF_TOKEN_LIFETIME_S,
      jti: randomToken(16),
      proof_id: agent.proofId,
      kind: agent.subjectKind,
      cnf: { jkt: agent.jkt },
      challenge_id: input.challengeId,
      ...(runHash ? { run_proof_hash: runHash } : {}),
    },
    key.privateKey,
    'ES256',
  );
  // The last proof is shown to the minute: one write a minute per agent, not one per proof.
  if (agent.lastProofAt === null || now - agent.lastProofAt >= LAST_PROOF_RESOLUTION_MS)
    await services.storage.agents.recordProof(agent.agentId, now);
  return { token, expiresIn: PROOF_TOKEN_LIFETIME_S };
}
