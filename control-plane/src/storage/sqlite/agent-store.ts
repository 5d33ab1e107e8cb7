import type { AgentStore, StoredAgent } from '../types.js';
import {
  agentFromRow,
  agentGrantFromRow,
  enrollmentFromRow,
  agentEvidenceFromRow,
  transferFromRow,
  type AgentRow,
  type AgentGrantRow,
  type EnrollmentRow,
  type AgentEvidenceRow,
  type TransferRow,
} from '../rows.js';
import { cached, type Runner } from './serial-runner.js';

function agentParams(a: StoredAgent): unknown[] {
  return [
    a.proofId,
    a.ownerId,
    a.name,
    a.subjectKind,
    JSON.stringify(a.publicJwk),
    a.jkt,
    a.alg,
    a.state,
    a.visibility,
    JSON.stringify(a.declared),
    a.resumeNeedsKey ? 1 : 0,
    a.keyProvenAt,
    a.ownerApprovedAt,
    a.lastProofAt,
    a.createdAt,
    a.updatedAt,
  ];
}

export function sqliteAgentStore(runner: Runner): AgentStore {
  return {
    insertEnrollment: (e) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO agent_enrollments (enrollment_id, name, subject_kind, public_jwk, jkt, alg, visibility, owner_code_hash, state, owner_id, approved_at, agent_id, created_at, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          e.enrollmentId,
          e.name,
          e.subjectKind,
          JSON.stringify(e.publicJwk),
          e.jkt,
          e.alg,
          e.visibility,
          e.ownerCodeHash,
          e.state,
          e.ownerId,
          e.approvedAt,
          e.agentId,
          e.createdAt,
          e.expiresAt,
        );
      }),
    getEnrollment: (id) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM agent_enrollments WHERE enrollment_id = ?').get(id) as
          EnrollmentRow | undefined;
        return row ? enrollmentFromRow(row) : null;
      }),
    approveEnrollment: (id, ownerId, at) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE agent_enrollments SET state = 'approved', owner_id = ?, approved_at = ? WHERE enrollment_id = ? AND state = 'pending_approval' AND expires_at > ?`,
          ).run(ownerId, at, id, at).changes === 1,
      ),
    completeEnrollment: (id, agentId, at) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE agent_enrollments SET state = 'completed', agent_id = ? WHERE enrollment_id = ? AND state = 'approved' AND expires_at > ?`,
          ).run(agentId, id, at).changes === 1,
      ),
    listApprovedEnrollments: (ownerId, now) =>
      runner.run((db) =>
        (
          cached(
            db,
            `SELECT * FROM agent_enrollments WHERE owner_id = ? AND state = 'approved' AND expires_at > ? ORDER BY created_at`,
          ).all(ownerId, now) as EnrollmentRow[]
        ).map(enrollmentFromRow),
      ),
    insertAgent: (a) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO agents (agent_id, proof_id, owner_id, name, subject_kind, public_jwk, jkt, alg, state, visibility, declared, resume_needs_key, key_proven_at, owner_approved_at, last_proof_at, created_at, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(a.agentId, ...agentParams(a));
      }),
    get: (agentId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM agents WHERE agent_id = ?').get(agentId) as AgentRow | undefined;
        return row ? agentFromRow(row) : null;
      }),
    getByProofId: (proofId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM agents WHERE proof_id = ?').get(proofId) as AgentRow | undefined;
        return row ? agentFromRow(row) : null;
      }),
    listByOwner: (ownerId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM agents WHERE owner_id = ? ORDER BY created_at, agent_id').all(ownerId) as AgentRow[]
        ).map(agentFromRow),
      ),
    update: (a, expectedState) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE agents SET proof_id = ?, owner_id = ?, name = ?, subject_kind = ?, public_jwk = ?, jkt = ?, alg = ?, state = ?, visibility = ?, declared = ?,
        resume_needs_key = ?, key_proven_at = ?, owner_approved_at = ?, last_proof_at = ?, created_at = ?, updated_at = ? WHERE agent_id = ? AND state = ?`,
          ).run(...agentParams(a), a.agentId, expectedState).changes === 1,
      ),
    recordProof: (agentId, at) =>
      runner.run((db) => {
        cached(db, 'UPDATE agents SET last_proof_at = MAX(COALESCE(last_proof_at, 0), ?) WHERE agent_id = ?').run(
          at,
          agentId,
        );
      }),
    appendEvidence: (e) =>
      runner.run((db) => {
        cached(db, 'INSERT INTO agent_evidence (agent_id, type, at, expires_at, detail) VALUES (?, ?, ?, ?, ?)').run(
          e.agentId,
          e.type,
          e.at,
          e.expiresAt,
          JSON.stringify(e.detail),
        );
      }),
    listEvidence: (agentId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM agent_evidence WHERE agent_id = ? ORDER BY seq').all(agentId) as AgentEvidenceRow[]
        ).map(agentEvidenceFromRow),
      ),
    putTransfer: (t) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO agent_transfers (agent_id, from_owner_id, to_identity_id, code_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (agent_id) DO UPDATE SET from_owner_id = excluded.from_owner_id, to_identity_id = excluded.to_identity_id, code_hash = excluded.code_hash,
        created_at = excluded.created_at, expires_at = excluded.expires_at`,
        ).run(t.agentId, t.fromOwnerId, t.toIdentityId, t.codeHash, t.createdAt, t.expiresAt);
      }),
    getTransfer: (agentId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM agent_transfers WHERE agent_id = ?').get(agentId) as
          TransferRow | undefined;
        return row ? transferFromRow(row) : null;
      }),
    consumeTransfer: (agentId, codeHash, toIdentityId, now) =>
      runner.run(
        (db) =>
          cached(
            db,
            'DELETE FROM agent_transfers WHERE agent_id = ? AND code_hash = ? AND to_identity_id = ? AND expires_at > ?',
          ).run(agentId, codeHash, toIdentityId, now).changes === 1,
      ),
    deleteTransfer: (agentId) =>
      runner.run((db) => {
        cached(db, 'DELETE FROM agent_transfers WHERE agent_id = ?').run(agentId);
      }),
    insertGrant: (g) =>
      runner.run((db) => {
        cached(
          db,
          'INSERT INTO agent_grants (grant_id, agent_id, owner_id, client_id, resource, scope, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        ).run(g.grantId, g.agentId, g.ownerId, g.clientId, g.resource, g.scope, g.createdAt, g.revokedAt);
      }),
    getGrant: (grantId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM agent_grants WHERE grant_id = ?').get(grantId) as
          AgentGrantRow | undefined;
        return row ? agentGrantFromRow(row) : null;
      }),
    listGrants: (agentId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM agent_grants WHERE agent_id = ? ORDER BY created_at, grant_id').all(
            agentId,
          ) as AgentGrantRow[]
        ).map(agentGrantFromRow),
      ),
    revokeGrant: (grantId, at) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE agent_grants SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL').run(
            at,
            grantId,
          ).changes === 1,
      ),
    revokeGrants: (agentId, at) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE agent_grants SET revoked_at = ? WHERE agent_id = ? AND revoked_at IS NULL').run(
            at,
            agentId,
          ).changes,
      ),
  };
}
