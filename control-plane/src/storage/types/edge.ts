import type { GatewayPolicy } from '#lib/oauth/client-metadata.js';
import type { JWK } from 'jose';
import type { VerifiedEvidence } from '#lib/gateway-protocol/evidence.js';

// Back-channel logout, the edge gate and agent identity.

// ---- OpenID Connect Back-Channel Logout 1.0: who to tell when a session ends (docs/oidc.md#101-back-channel-logout) ----

/** A client that got tokens in a session: the session's `sid` and the account's `sub` for its logout token. */
export interface SessionParticipant {
  sessionId: string;
  clientId: string;
  identityId: string;
}

export type BackchannelLogoutState = 'pending' | 'delivered' | 'abandoned';

/** One logout token to deliver: the outbox row, written in the transaction that ended the session. */
export interface BackchannelLogout {
  logoutId: string;
  clientId: string;
  /** The logout token's `sub`. */
  identityId: string;
  /** The logout token's `sid`: the session id the client's ID tokens named. */
  sessionId: string;
  /** The logout token's `jti`, the same on every attempt, so the client can tell a retry from a new logout. */
  jti: string;
  createdAt: number;
  /** Attempts made so far. */
  attempts: number;
  nextAttemptAt: number;
  state: BackchannelLogoutState;
  /** Why the last attempt failed (a fetch reason or the answer's status), never a body. */
  lastError: string | null;
  finishedAt: number | null;
}

/** What one delivery attempt ended with. */
export interface LogoutAttempt {
  state: BackchannelLogoutState;
  attempts: number;
  nextAttemptAt: number;
  lastError: string | null;
  finishedAt: number | null;
}

export interface LogoutStore {
  /** Remembers that the client got an ID token in the session outside a grant (a FedCM assertion). */
  recordParticipant(participant: SessionParticipant, at: number): Promise<void>;
  /** Every client that got tokens in one of the sessions: a grant of it, or a recorded participant. */
  participants(sessionIds: readonly string[]): Promise<SessionParticipant[]>;
  /** Queues a logout; false when one for the same session and client is queued already. */
  enqueue(logout: BackchannelLogout): Promise<boolean>;
  /**
   * Leases up to `limit` pending logouts due at `now` (or whose lease ran out) to `holder` until
   * `leaseUntil`, atomically: two replicas claiming at once never get the same row.
   */
  claimDue(now: number, holder: string, leaseUntil: number, limit: number): Promise<BackchannelLogout[]>;
  /** Records an attempt's outcome and ends the lease; false when `holder` no longer holds it. */
  finish(logoutId: string, holder: string, attempt: LogoutAttempt): Promise<boolean>;
  get(logoutId: string): Promise<BackchannelLogout | null>;
  /** The logouts queued for a session, oldest first. */
  listForSession(sessionId: string): Promise<BackchannelLogout[]>;
  /**
   * Deletes delivered or abandoned logouts finished before `finishedBefore`, and participants
   * recorded before `participantsBefore` (their sessions have ended by then). Returns how many rows went.
   */
  purge(finishedBefore: number, participantsBefore: number): Promise<number>;
}

// ---- edge-gate: issued configs (declared) and evidence (observed), kept apart (docs/gateway.md#evidence) ----

/** One signed gateway config as issued; a version, once issued, is never re-signed with other content. */
export interface IssuedGatewayConfig {
  clientId: string;
  version: number;
  /** The compact JWS, served byte for byte. */
  jws: string;
  /** SHA-256 hex of the JWS: what the gateway's evidence reports. */
  hash: string;
  /** SHA-256 hex of the policy's RFC 8785 canonical JSON. */
  policyHash: string;
  policy: GatewayPolicy;
  /** The control-plane key that signed it. */
  kid: string;
  issuedAt: number;
  expiresAt: number;
}

/** The newest signed evidence report of one gateway instance, as verified on arrival. */
export interface StoredGatewayEvidence extends VerifiedEvidence {
  receivedAt: number;
  /** The compact JWS as it arrived. */
  jws: string;
}

export interface GatewayStore {
  /** The highest version issued to the client, or null. */
  latestConfig(clientId: string): Promise<IssuedGatewayConfig | null>;
  /** False when the client has that version already (versions are unique per client). */
  insertConfig(config: IssuedGatewayConfig): Promise<boolean>;
  /**
   * Keeps the newest report per (client, instance): a report issued before the stored one
   * changes nothing (false), so a replayed old report cannot hide a newer one.
   */
  recordEvidence(evidence: StoredGatewayEvidence): Promise<boolean>;
  /** The client's instances, most recently heard from first (at most `limit`). */
  listEvidence(clientId: string, limit: number): Promise<StoredGatewayEvidence[]>;
  /** Drops the client's reports that expired before `expiredBefore` (ms): instances long gone. Returns how many. */
  forgetEvidence(clientId: string, expiredBefore: number): Promise<number>;
}

// ---- agent identity (docs/agents.md) ----

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
