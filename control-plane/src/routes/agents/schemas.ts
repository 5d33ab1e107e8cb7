import type { FastifyRequest } from 'fastify';
import type { KeyProofRequest } from '../../agents/key-proof.js';

/** Shared pieces of the agent route schemas (names fixed by the public agent API, docs/agents.md). */
export const SUBJECT_KINDS = [
  'service_bot',
  'automation',
  'ai_agent',
  'hybrid_agent',
  'robot',
  'device',
  'agent_team',
  'ephemeral_subagent',
] as const;
export const VISIBILITIES = ['private', 'unlisted', 'public'] as const;

export const agentId = { type: 'string', pattern: '^agt_[A-Za-z0-9_-]{1,64}$' } as const;
export const enrollmentId = { type: 'string', pattern: '^aen_[A-Za-z0-9_-]{1,64}$' } as const;
export const challengeId = { type: 'string', pattern: '^apc_[A-Za-z0-9_-]{1,64}$' } as const;
export const proofId = { type: 'string', pattern: '^[A-Za-z0-9_-]{22,64}$' } as const;
/** Checked in code (lib/agents/jwk.ts), so a private key gets its own reason instead of a schema error. */
export const publicJwk = {
  type: 'object',
  additionalProperties: true,
  maxProperties: 20,
  description: 'EC P-256 or OKP Ed25519 public JWK; private members are refused.',
} as const;
export const code = {
  type: 'string',
  minLength: 8,
  maxLength: 12,
  description: 'XXXX-XXXX (case, spaces and the dash are forgiven)',
} as const;
export const rfc3339 = { type: 'string', format: 'date-time' } as const;
export const agentState = { enum: ['active', 'suspended', 'compromised', 'revoked'] } as const;

/** The DPoP header of a request, with the method and the path its `htu` must name. */
export function keyProofOf(request: FastifyRequest, path: string): KeyProofRequest {
  return { header: request.headers.dpop, method: request.method, path };
}
