import type { AgentStore, StoredAgent, StoredAgentEvidence, StoredAgentGrant, StoredAgentTransfer, StoredEnrollment } from '../types.js';
import type { Runner } from './serial-runner.js';

interface EnrollmentRow {
  enrollment_id: string; name: string; subject_kind: string; public_jwk: string; jkt: string; alg: string; visibility: string;
  owner_code_hash: string; state: string; owner_id: string | null; approved_at: number | null; agent_id: string | null; created_at: number; expires_at: number;
}

interface AgentRow {
  agent_id: string; proof_id: string; owner_id: string; name: string; subject_kind: string; public_jwk: string; jkt: string; alg: string;
  state: string; visibility: string; declared: string; resume_needs_key: number; key_proven_at: number | null; owner_approved_at: number | null;
  last_proof_at: number | null; created_at: number; updated_at: number;
}

interface EvidenceRow { agent_id: string; type: string; at: number; expires_at: number; detail: string }
interface TransferRow { agent_id: string; from_owner_id: string; to_identity_id: string; code_hash: string; created_at: number; expires_at: number }
interface GrantRow { grant_id: string; agent_id: string; owner_id: string; client_id: string; resource: string | null; scope: string; created_at: number; revoked_at: number | null }

const toEnrollment = (row: EnrollmentRow): StoredEnrollment => ({
  enrollmentId: row.enrollment_id, name: row.name, subjectKind: row.subject_kind as StoredEnrollment['subjectKind'], publicJwk: JSON.parse(row.public_jwk),
  jkt: row.jkt, alg: row.alg as StoredEnrollment['alg'], visibility: row.visibility as StoredEnrollment['visibility'], ownerCodeHash: row.owner_code_hash,
  state: row.state as StoredEnrollment['state'], ownerId: row.owner_id, approvedAt: row.approved_at, agentId: row.agent_id, createdAt: row.created_at, expiresAt: row.expires_at,
});

const toAgent = (row: AgentRow): StoredAgent => ({
  agentId: row.agent_id, proofId: row.proof_id, ownerId: row.owner_id, name: row.name, subjectKind: row.subject_kind as StoredAgent['subjectKind'],
  publicJwk: JSON.parse(row.public_jwk), jkt: row.jkt, alg: row.alg as StoredAgent['alg'], state: row.state as StoredAgent['state'],
  visibility: row.visibility as StoredAgent['visibility'], declared: JSON.parse(row.declared), resumeNeedsKey: row.resume_needs_key === 1,
  keyProvenAt: row.key_proven_at, ownerApprovedAt: row.owner_approved_at, lastProofAt: row.last_proof_at, createdAt: row.created_at, updatedAt: row.updated_at,
});

const toGrant = (row: GrantRow): StoredAgentGrant => ({
  grantId: row.grant_id, agentId: row.agent_id, ownerId: row.owner_id, clientId: row.client_id, resource: row.resource, scope: row.scope, createdAt: row.created_at, revokedAt: row.revoked_at,
});

const toTransfer = (row: TransferRow): StoredAgentTransfer => ({
  agentId: row.agent_id, fromOwnerId: row.from_owner_id, toIdentityId: row.to_identity_id, codeHash: row.code_hash, createdAt: row.created_at, expiresAt: row.expires_at,
});

function agentParams(a: StoredAgent): unknown[] {
  return [a.proofId, a.ownerId, a.name, a.subjectKind, JSON.stringify(a.publicJwk), a.jkt, a.alg, a.state, a.visibility, JSON.stringify(a.declared),
    a.resumeNeedsKey ? 1 : 0, a.keyProvenAt, a.ownerApprovedAt, a.lastProofAt, a.createdAt, a.updatedAt];
}

export function sqliteAgentStore(runner: Runner): AgentStore {
  return {
    insertEnrollment: (e) => runner.run((db) => {
      db.prepare(`INSERT INTO agent_enrollments (enrollment_id, name, subject_kind, public_jwk, jkt, alg, visibility, owner_code_hash, state, owner_id, approved_at, agent_id, created_at, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(e.enrollmentId, e.name, e.subjectKind, JSON.stringify(e.publicJwk), e.jkt, e.alg, e.visibility, e.ownerCodeHash, e.state, e.ownerId, e.approvedAt, e.agentId, e.createdAt, e.expiresAt);
    }),
    getEnrollment: (id) => runner.run((db) => {
      const row = db.prepare('SELECT * FROM agent_enrollments WHERE enrollment_id = ?').get(id) as EnrollmentRow | undefined;
      return row ? toEnrollment(row) : null;
    }),
    approveEnrollment: (id, ownerId, at) => runner.run((db) =>
      db.prepare(`UPDATE agent_enrollments SET state = 'approved', owner_id = ?, approved_at = ? WHERE enrollment_id = ? AND state = 'pending_approval' AND expires_at > ?`).run(ownerId, at, id, at).changes === 1),
    completeEnrollment: (id, agentId, at) => runner.run((db) =>
      db.prepare(`UPDATE agent_enrollments SET state = 'completed', agent_id = ? WHERE enrollment_id = ? AND state = 'approved' AND expires_at > ?`).run(agentId, id, at).changes === 1),
    listApprovedEnrollments: (ownerId, now) => runner.run((db) =>
      (db.prepare(`SELECT * FROM agent_enrollments WHERE owner_id = ? AND state = 'approved' AND expires_at > ? ORDER BY created_at`).all(ownerId, now) as EnrollmentRow[]).map(toEnrollment)),
    insertAgent: (a) => runner.run((db) => {
      db.prepare(`INSERT INTO agents (agent_id, proof_id, owner_id, name, subject_kind, public_jwk, jkt, alg, state, visibility, declared, resume_needs_key, key_proven_at, owner_approved_at, last_proof_at, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(a.agentId, ...agentParams(a));
    }),
    get: (agentId) => runner.run((db) => {
      const row = db.prepare('SELECT * FROM agents WHERE agent_id = ?').get(agentId) as AgentRow | undefined;
      return row ? toAgent(row) : null;
    }),
    getByProofId: (proofId) => runner.run((db) => {
      const row = db.prepare('SELECT * FROM agents WHERE proof_id = ?').get(proofId) as AgentRow | undefined;
      return row ? toAgent(row) : null;
    }),
    listByOwner: (ownerId) => runner.run((db) =>
      (db.prepare('SELECT * FROM agents WHERE owner_id = ? ORDER BY created_at, agent_id').all(ownerId) as AgentRow[]).map(toAgent)),
    update: (a, expectedState) => runner.run((db) =>
      db.prepare(`UPDATE agents SET proof_id = ?, owner_id = ?, name = ?, subject_kind = ?, public_jwk = ?, jkt = ?, alg = ?, state = ?, visibility = ?, declared = ?,
        resume_needs_key = ?, key_proven_at = ?, owner_approved_at = ?, last_proof_at = ?, created_at = ?, updated_at = ? WHERE agent_id = ? AND state = ?`)
        .run(...agentParams(a), a.agentId, expectedState).changes === 1),
    recordProof: (agentId, at) => runner.run((db) => {
      db.prepare('UPDATE agents SET last_proof_at = MAX(COALESCE(last_proof_at, 0), ?) WHERE agent_id = ?').run(at, agentId);
    }),
    appendEvidence: (e) => runner.run((db) => {
      db.prepare('INSERT INTO agent_evidence (agent_id, type, at, expires_at, detail) VALUES (?, ?, ?, ?, ?)').run(e.agentId, e.type, e.at, e.expiresAt, JSON.stringify(e.detail));
    }),
    listEvidence: (agentId) => runner.run((db) =>
      (db.prepare('SELECT * FROM agent_evidence WHERE agent_id = ? ORDER BY seq').all(agentId) as EvidenceRow[]).map((row): StoredAgentEvidence => ({
        agentId: row.agent_id, type: row.type as StoredAgentEvidence['type'], at: row.at, expiresAt: row.expires_at, detail: JSON.parse(row.detail),
      }))),
    putTransfer: (t) => runner.run((db) => {
      db.prepare(`INSERT INTO agent_transfers (agent_id, from_owner_id, to_identity_id, code_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (agent_id) DO UPDATE SET from_owner_id = excluded.from_owner_id, to_identity_id = excluded.to_identity_id, code_hash = excluded.code_hash,
        created_at = excluded.created_at, expires_at = excluded.expires_at`).run(t.agentId, t.fromOwnerId, t.toIdentityId, t.codeHash, t.createdAt, t.expiresAt);
    }),
    getTransfer: (agentId) => runner.run((db) => {
      const row = db.prepare('SELECT * FROM agent_transfers WHERE agent_id = ?').get(agentId) as TransferRow | undefined;
      return row ? toTransfer(row) : null;
    }),
    consumeTransfer: (agentId, codeHash, toIdentityId, now) => runner.run((db) =>
      db.prepare('DELETE FROM agent_transfers WHERE agent_id = ? AND code_hash = ? AND to_identity_id = ? AND expires_at > ?').run(agentId, codeHash, toIdentityId, now).changes === 1),
    deleteTransfer: (agentId) => runner.run((db) => {
      db.prepare('DELETE FROM agent_transfers WHERE agent_id = ?').run(agentId);
    }),
    insertGrant: (g) => runner.run((db) => {
      db.prepare('INSERT INTO agent_grants (grant_id, agent_id, owner_id, client_id, resource, scope, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
        .run(g.grantId, g.agentId, g.ownerId, g.clientId, g.resource, g.scope, g.createdAt, g.revokedAt);
    }),
    getGrant: (grantId) => runner.run((db) => {
      const row = db.prepare('SELECT * FROM agent_grants WHERE grant_id = ?').get(grantId) as GrantRow | undefined;
      return row ? toGrant(row) : null;
    }),
    listGrants: (agentId) => runner.run((db) =>
      (db.prepare('SELECT * FROM agent_grants WHERE agent_id = ? ORDER BY created_at, grant_id').all(agentId) as GrantRow[]).map(toGrant)),
    revokeGrant: (grantId, at) => runner.run((db) =>
      db.prepare('UPDATE agent_grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL').run(at, grantId).changes === 1),
    revokeGrants: (agentId, at) => runner.run((db) =>
      db.prepare('UPDATE agent_grants SET revoked_at = ? WHERE agent_id = ? AND revoked_at IS NULL').run(at, agentId).changes),
  };
}
