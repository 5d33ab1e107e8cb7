import type { FastifyInstance } from 'fastify';
import { fail } from '#lib/errors/keyplane-error.js';
import { signTrustBundle } from '../../agents/trust-bundle.js';
import { issueChallenge, proofVector, proveAgent, visibleAgent } from '../../agents/proof.js';
import type { MessageKey } from '#lib/i18n/translate.js';
import { html, page, raw } from '../../pages/layout.js';
import { type PageUi, uiOf } from '../../pages/ui.js';
import { anyObject, errorResponses, okObject } from '../../http/schemas.js';
import { challengeId, keyProofOf, rfc3339 } from './schemas.js';

const PROOF_ID = /^[A-Za-z0-9_-]{22,64}$/;

const CLAIMS: Record<string, MessageKey | undefined> = {
  key_control: 'agent_proof.claim.key_control',
  channel_control: 'agent_proof.claim.channel_control',
  descriptor_integrity: 'agent_proof.claim.descriptor_integrity',
  owner_accountability: 'agent_proof.claim.owner_accountability',
};
const CLAIM_STATUS: Record<string, MessageKey | undefined> = {
  declared: 'agent_proof.status.declared',
  verified: 'agent_proof.status.verified',
  expired: 'agent_proof.status.expired',
};
const STATES: Record<string, MessageKey | undefined> = {
  active: 'agents.state.active',
  suspended: 'agents.state.suspended',
  compromised: 'agents.state.compromised',
  revoked: 'agents.state.revoked',
};
const KINDS: Record<string, MessageKey | undefined> = {
  service_bot: 'agent_proof.kind.service_bot',
  automation: 'agent_proof.kind.automation',
  ai_agent: 'agent_proof.kind.ai_agent',
  hybrid_agent: 'agent_proof.kind.hybrid_agent',
  robot: 'agent_proof.kind.robot',
  device: 'agent_proof.kind.device',
  agent_team: 'agent_proof.kind.agent_team',
  ephemeral_subagent: 'agent_proof.kind.ephemeral_subagent',
};

const label = (ui: PageUi, keys: Record<string, MessageKey | undefined>, value: string): string => {
  const key = keys[value];
  return key ? ui.t(key) : value.replaceAll('_', ' ');
};

/** An RFC 3339 time in the reader's locale (UTC); English keeps the unambiguous ISO form, as the account page. */
const when = (ui: PageUi, at: string): string => {
  const ms = Date.parse(at);
  if (Number.isNaN(ms)) return at;
  return `${ui.locale === 'en' ? new Date(ms).toISOString().replace('T', ' ').slice(0, 16) : ui.dateTime(ms)} UTC`;
};
const tokenAnswer = {
  200: okObject({ token: { type: 'string' }, expires_in: { type: 'integer', maximum: 300 } }, ['token', 'expires_in']),
  ...errorResponses,
};
const audience = {
  type: 'string',
  minLength: 1,
  maxLength: 500,
  description: "The verifier's audience; the token's `aud`",
} as const;
const proofIdField = { type: 'string', minLength: 1, maxLength: 100 } as const;

/**
 * Proof Links and public proofs: anyone may read a visible profile and ask an agent to prove its
 * key. A URL is never a credential: it shows what is public and nothing else.
 */
export default async function agentProofRoutes(app: FastifyInstance): Promise<void> {
  const services = app.kp;

  // Two routes, so that /openapi.json names both paths the spec gives (code generators need each).
  const proofParams = {
    type: 'object',
    required: ['proof_id'],
    properties: { proof_id: { type: 'string', maxLength: 80, description: 'The opaque proof id from the Proof Link' } },
  } as const;
  const visibleVector = async (proofId: string) => {
    if (!PROOF_ID.test(proofId)) throw fail('not_found', 'no public agent profile has this id');
    const agent = await visibleAgent(services, proofId);
    return { agent, vector: await proofVector(services, agent) };
  };

  app.get(
    '/agent/:proof_id.json',
    {
      config: { cache: 'no-store' },
      schema: {
        tags: ['agents'],
        summary:
          'Proof vector of a public agent: claims, evidence, a W3C VC 2.0 as vc+jwt and the A2A projection; private and unknown ids are the same 404',
        params: proofParams,
        response: { 200: anyObject, ...errorResponses },
      },
    },
    async (request) => (await visibleVector((request.params as { proof_id: string }).proof_id)).vector,
  );

  app.get(
    '/agent/:proof_id',
    {
      config: { cache: 'no-store' },
      schema: {
        tags: ['agents'],
        summary:
          'Proof Link: the HTML profile of a public agent (its JSON at /agent/{proof_id}.json); private and unknown ids are the same 404',
        params: proofParams,
        produces: ['text/html'],
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const { agent, vector } = await visibleVector((request.params as { proof_id: string }).proof_id);
      reply.type('text/html; charset=utf-8');
      const ui = uiOf(request);
      const t = ui.t;
      const rows = Object.entries(vector.claims).map(
        ([name, claim]) =>
          html`<tr><th scope="row">${label(ui, CLAIMS, name)}</th><td data-claim="${name}">${label(ui, CLAIM_STATUS, claim.status)}</td><td>${claim.verified_at ? when(ui, claim.verified_at) : ''}</td></tr>`,
      );
      return page({
        title: agent.name,
        nonce: request.kp.cspNonce,
        ui,
        body: html`<h1>${agent.name}</h1>
<p>${label(ui, KINDS, agent.subjectKind)} · <strong data-state="${agent.state}">${label(ui, STATES, agent.state)}</strong></p>
<p>${raw(ui.rich('agent_proof.thumbprint', { code: (c) => `<code>${c}</code>` }, { jkt: agent.jkt }))}</p>
<table><thead><tr><th scope="col">${t('agent_proof.col.claim')}</th><th scope="col">${t('agent_proof.col.status')}</th><th scope="col">${t('agent_proof.col.verified_at')}</th></tr></thead><tbody>${rows}</tbody></table>
<p><a href="/agent/${agent.proofId}.json">${t('agent_proof.vector')}</a></p>
<p>${t('agent_proof.public_only')}</p>`,
      });
    },
  );

  app.post(
    '/api/agent-proof/challenge',
    {
      schema: {
        tags: ['agents'],
        summary: 'A one-use, 60-second nonce for a visible active agent, for verify or run',
        body: {
          type: 'object',
          required: ['proof_id'],
          additionalProperties: false,
          properties: { proof_id: proofIdField, purpose: { enum: ['verify', 'run'] } },
        },
        response: {
          200: okObject({ challenge_id: challengeId, nonce: { type: 'string' }, expires_at: rfc3339 }, [
            'challenge_id',
            'nonce',
            'expires_at',
          ]),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const body = request.body as { proof_id: string; purpose?: 'verify' | 'run' };
      const issued = await issueChallenge(services, { proofId: body.proof_id, purpose: body.purpose ?? 'verify' });
      return {
        ok: true,
        challenge_id: issued.challengeId,
        nonce: issued.nonce,
        expires_at: new Date(issued.expiresAt).toISOString(),
      };
    },
  );

  app.post(
    '/api/agent-proof/verify',
    {
      schema: {
        tags: ['agents'],
        summary:
          'Prove the agent key: a DPoP proof by the current key whose nonce is the challenge nonce; returns an agent-proof+jwt',
        headers: { type: 'object', properties: { dpop: { type: 'string' } } },
        body: {
          type: 'object',
          required: ['proof_id', 'challenge_id'],
          additionalProperties: false,
          properties: { proof_id: proofIdField, challenge_id: challengeId, audience },
        },
        response: tokenAnswer,
      },
    },
    async (request) => {
      const body = request.body as { proof_id: string; challenge_id: string; audience?: string };
      const proved = await proveAgent(
        services,
        'verify',
        {
          proofId: body.proof_id,
          challengeId: body.challenge_id,
          ...(body.audience ? { audience: body.audience } : {}),
        },
        keyProofOf(request, '/api/agent-proof/verify'),
      );
      return { ok: true, token: proved.token, expires_in: proved.expiresIn };
    },
  );

  app.post(
    '/api/agent-proof/run',
    {
      schema: {
        tags: ['agents'],
        summary:
          'Bind a commitment-only svc-agent-run-proof-v1 to the agent key and a run challenge; returns an agent-run+jwt with run_proof_hash',
        headers: { type: 'object', properties: { dpop: { type: 'string' } } },
        body: {
          type: 'object',
          required: ['proof_id', 'challenge_id', 'run_proof'],
          additionalProperties: false,
          // The run proof is checked in code (lib/agents/run-proof.ts) so raw content gets its own refusal.
          properties: {
            proof_id: proofIdField,
            challenge_id: challengeId,
            audience,
            run_proof: { type: 'object', additionalProperties: true, maxProperties: 20 },
          },
        },
        response: tokenAnswer,
      },
    },
    async (request) => {
      const body = request.body as { proof_id: string; challenge_id: string; audience?: string; run_proof: unknown };
      const proved = await proveAgent(
        services,
        'run',
        {
          proofId: body.proof_id,
          challengeId: body.challenge_id,
          runProof: body.run_proof,
          ...(body.audience ? { audience: body.audience } : {}),
        },
        keyProofOf(request, '/api/agent-proof/run'),
      );
      return { ok: true, token: proved.token, expires_in: proved.expiresIn };
    },
  );
  app.get(
    '/api/agent-trust/bundle',
    {
      schema: {
        tags: ['agents'],
        summary:
          'The claim registry as a signed trust bundle (compact JWS, typ agent-trust-bundle+jwt, ES256, key via jwks_uri) for federation peers',
        response: { 200: okObject({ bundle: { type: 'string' } }, ['bundle']), ...errorResponses },
      },
    },
    async () => ({ ok: true, bundle: await signTrustBundle(services) }),
  );
}
