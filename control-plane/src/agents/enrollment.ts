import { calculateJwkThumbprint } from 'jose';
import { checkAgentJwk } from '#lib/agents/jwk.js';
import { ENROLLMENT_LIFETIME_MS, enrollmentState, type EnrollmentState } from '#lib/agents/lifecycle.js';
import { generateOwnerCode, normalizeOwnerCode } from '#lib/agents/owner-code.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { constantEquals } from '#lib/crypto/constant-equals.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices, SessionView } from '../context.js';
import type { AgentVisibility, StoredAgent, StoredEnrollment, SubjectKind } from '../storage/interface.js';
import { checkAgentKeyProof, type KeyProofRequest } from './key-proof.js';

export type AgentServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'secrets' | 'keys' | 'now'
>;

/** Wrong owner codes an enrollment survives; the next attempt finds it gone (docs/agents.md#from-keygen-to-a-verified-run-token). */
export const OWNER_CODE_ATTEMPTS = 5;

const codeHash = (canonical: string): string => sha256Hex(`keyplane:agent-owner-code:v1\u0000${canonical}`);

export interface BeginInput {
  name: string;
  subjectKind: SubjectKind;
  publicJwk: unknown;
  visibility?: AgentVisibility;
}

/** `enroll/begin`: a pending enrollment for a checked public key, and the code its owner will type. */
export async function beginEnrollment(
  services: AgentServices,
  input: BeginInput,
): Promise<{ enrollmentId: string; ownerCode: string; expiresAt: number; receipt?: string }> {
  const { jwk, alg } = checkAgentJwk(input.publicJwk);
  const now = services.now();
  const ownerCode = generateOwnerCode();
  const enrollment: StoredEnrollment = {
    enrollmentId: randomId('aen'),
    name: input.name,
    subjectKind: input.subjectKind,
    publicJwk: jwk,
    jkt: await calculateJwkThumbprint(jwk, 'sha256'),
    alg,
    visibility: input.visibility ?? 'private',
    ownerCodeHash: codeHash(ownerCode),
    state: 'pending_approval',
    ownerId: null,
    approvedAt: null,
    agentId: null,
    createdAt: now,
    expiresAt: now + ENROLLMENT_LIFETIME_MS,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.agents.insertEnrollment(enrollment);
    return services.events.record(tx, {
      type: 'agent.enrollment_begun',
      at: now,
      outcome: 'success',
      enrollmentId: enrollment.enrollmentId,
      subjectKind: enrollment.subjectKind,
      jkt: enrollment.jkt,
    });
  });
  return {
    enrollmentId: enrollment.enrollmentId,
    ownerCode,
    expiresAt: enrollment.expiresAt,
    ...(receipt ? { receipt } : {}),
  };
}

/**
 * `enroll/approve`: the signed-in owner types the code. Unknown, expired, already approved and
 * wrong-code answers are one and the same `enrollment_unknown`, so the call reveals nothing;
 * after five attempts on one enrollment it is dead.
 */
export async function approveEnrollment(
  services: AgentServices,
  session: SessionView,
  input: { enrollmentId: string; ownerCode: string },
): Promise<{ receipt?: string }> {
  const unknown = () => fail('enrollment_unknown', 'no enrollment waits for approval with this id and code');
  const attempts = await services.state.incrWithTtl(`agents:approve:${input.enrollmentId}`, ENROLLMENT_LIFETIME_MS);
  if (attempts.count > OWNER_CODE_ATTEMPTS) throw unknown();
  const now = services.now();
  const enrollment = await services.storage.agents.getEnrollment(input.enrollmentId);
  const canonical = normalizeOwnerCode(input.ownerCode);
  if (
    !enrollment ||
    canonical === null ||
    enrollmentState(enrollment, now) !== 'pending_approval' ||
    !constantEquals(codeHash(canonical), enrollment.ownerCodeHash)
  )
    throw unknown();
  return services.storage.transaction(async (tx) => {
    if (!(await tx.agents.approveEnrollment(enrollment.enrollmentId, session.identityId, now))) throw unknown();
    return services.events.record(tx, {
      type: 'agent.enrollment_approved',
      at: now,
      outcome: 'success',
      enrollmentId: enrollment.enrollmentId,
      ownerId: session.identityId,
      sessionId: session.id,
    });
  });
}

/** `enroll/complete`: the agent proves its key with a nonce-bound DPoP proof; the enrollment becomes an active agent. */
export async function completeEnrollment(
  services: AgentServices,
  input: { enrollmentId: string },
  dpop: KeyProofRequest,
): Promise<{ agent: StoredAgent; receipt?: string }> {
  const now = services.now();
  const enrollment = await services.storage.agents.getEnrollment(input.enrollmentId);
  const state = enrollment ? enrollmentState(enrollment, now) : null;
  if (!enrollment || state === 'expired' || state === 'completed' || state === null)
    throw fail('enrollment_unknown', 'no enrollment with this id can be completed (unknown, expired or completed)');
  await checkAgentKeyProof(services, dpop, enrollment.jkt);
  if (state !== 'approved' || enrollment.ownerId === null)
    throw fail('enrollment_not_approved', 'the owner has not approved this enrollment yet');
  const agent: StoredAgent = {
    agentId: randomId('agt'),
    proofId: randomToken(16),
    ownerId: enrollment.ownerId,
    name: enrollment.name,
    subjectKind: enrollment.subjectKind,
    publicJwk: enrollment.publicJwk,
    jkt: enrollment.jkt,
    alg: enrollment.alg,
    state: 'active',
    visibility: enrollment.visibility,
    declared: {},
    resumeNeedsKey: false,
    keyProvenAt: now,
    ownerApprovedAt: enrollment.approvedAt,
    lastProofAt: now,
    createdAt: now,
    updatedAt: now,
  };
  const { receipt } = await services.storage.transaction(async (tx) => {
    if (!(await tx.agents.completeEnrollment(enrollment.enrollmentId, agent.agentId, now)))
      throw fail('enrollment_unknown', 'this enrollment was completed already');
    await tx.agents.insertAgent(agent);
    return services.events.record(tx, {
      type: 'agent.enrolled',
      at: now,
      outcome: 'success',
      agentId: agent.agentId,
      enrollmentId: enrollment.enrollmentId,
      ownerId: agent.ownerId,
      jkt: agent.jkt,
    });
  });
  return { agent, ...(receipt ? { receipt } : {}) };
}

/** `enroll/status`: the state and expiry only, never who approved it. */
export async function enrollmentStatus(
  services: AgentServices,
  enrollmentId: string,
): Promise<{ status: EnrollmentState; expiresAt: number | null }> {
  const enrollment = await services.storage.agents.getEnrollment(enrollmentId);
  if (!enrollment) throw fail('enrollment_unknown', 'no enrollment has this id');
  return { status: enrollmentState(enrollment, services.now()), expiresAt: enrollment.expiresAt };
}

/** The URL of an agent's Proof Link. */
export function proofUrl(services: Pick<ControlPlaneServices, 'config'>, proofId: string): string {
  return `${services.config.issuer}/agent/${proofId}`;
}
