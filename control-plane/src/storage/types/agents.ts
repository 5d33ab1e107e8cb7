import type { JWK } from 'jose';

// Agent identity (docs/agents.md).

export type AgentVisibility = 'private' | 'unlisted' | 'public';
export type SubjectKind =
  'service_bot' | 'automation' | 'ai_agent' | 'hybrid_agent' | 'robot' | 'device' | 'agent_team' | 'ephemeral_subagent';

export interface StoredEnrollment {
  enrollmentId: string;
  name: string;
  subjectKind: SubjectKind;
  publicJwk: JWK;
  jkt: string;
  alg: 'ES256' | 'EdDSA';
  visibility: AgentVisibility;
  /** SHA-256 (hex) of the canonical owner code; the code itself is never stored. */
  ownerCodeHash: string;
  state: 'pending_approval' | 'approved' | 'completed' | 'expired';
  ownerId: string | null;
  approvedAt: number | null;
  agentId: string | null;
  createdAt: number;
  expiresAt: number;
}

export interface StoredAgent {
  agentId: string;
  /** Opaque public id of the Proof Link (128 bits, no prefix). */
  proofId: string;
  ownerId: string;
  name: string;
  subjectKind: SubjectKind;
  publicJwk: JWK;
  jkt: string;
  alg: 'ES256' | 'EdDSA';
  state: 'active' | 'suspended' | 'compromised' | 'revoked';
  visibility: AgentVisibility;
  /** Declared facts (a2aCardUrl, capabilities); a card discovery fills them only where empty. */
  declared: { a2aCardUrl?: string; capabilities?: string[] };
  /** Set by a transfer acceptance or a compromise recovery: resuming then needs the owner at `sensitive` and the agent key together. */
  resumeNeedsKey: boolean;
  keyProvenAt: number | null;
  ownerApprovedAt: number | null;
  lastProofAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface StoredAgentEvidence {
  agentId: string;
  type: 'domain-control' | 'descriptor-integrity';
  at: number;
  expiresAt: number;
  detail: Record<string, string>;
}

export interface StoredAgentTransfer {
  agentId: string;
  fromOwnerId: string;
  toIdentityId: string;
  codeHash: string;
  createdAt: number;
  expiresAt: number;
}

export interface StoredAgentGrant {
  /** `agg_…`; the prefix of the jti of every access token issued under it. */
  grantId: string;
  agentId: string;
  ownerId: string;
  clientId: string;
  resource: string | null;
  scope: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface AgentStore {
  insertEnrollment(enrollment: StoredEnrollment): Promise<void>;
  getEnrollment(enrollmentId: string): Promise<StoredEnrollment | null>;
  /** pending_approval → approved by `ownerId`, only while unexpired; false otherwise. */
  approveEnrollment(enrollmentId: string, ownerId: string, at: number): Promise<boolean>;
  /** approved → completed (one use), only while unexpired; false otherwise. */
  completeEnrollment(enrollmentId: string, agentId: string, at: number): Promise<boolean>;
  /** Enrollments this owner approved that are not completed or expired yet. */
  listApprovedEnrollments(ownerId: string, now: number): Promise<StoredEnrollment[]>;
  insertAgent(agent: StoredAgent): Promise<void>;
  get(agentId: string): Promise<StoredAgent | null>;
  getByProofId(proofId: string): Promise<StoredAgent | null>;
  listByOwner(ownerId: string): Promise<StoredAgent[]>;
  /** Every agent by id, `limit` after the id `after` (the console's list, paged by cursor). */
  listPage(query: { after: string | null; limit: number }): Promise<StoredAgent[]>;
  /** Writes `agent` only when the stored state is still `expectedState` (compare-and-set). */
  update(agent: StoredAgent, expectedState: StoredAgent['state']): Promise<boolean>;
  /** Records a successful key proof (verify, run) without touching anything else. */
  recordProof(agentId: string, at: number): Promise<void>;
  appendEvidence(entry: StoredAgentEvidence): Promise<void>;
  listEvidence(agentId: string): Promise<StoredAgentEvidence[]>;
  /** One pending transfer per agent: a new one replaces the old. */
  putTransfer(transfer: StoredAgentTransfer): Promise<void>;
  getTransfer(agentId: string): Promise<StoredAgentTransfer | null>;
  /** Deletes the transfer when it matches; true for exactly one caller. */
  consumeTransfer(agentId: string, codeHash: string, toIdentityId: string, now: number): Promise<boolean>;
  deleteTransfer(agentId: string): Promise<void>;
  insertGrant(grant: StoredAgentGrant): Promise<void>;
  getGrant(grantId: string): Promise<StoredAgentGrant | null>;
  listGrants(agentId: string): Promise<StoredAgentGrant[]>;
  revokeGrant(grantId: string, at: number): Promise<boolean>;
  /** Revokes every live grant of the agent; returns how many. */
  revokeGrants(agentId: string, at: number): Promise<number>;
}
