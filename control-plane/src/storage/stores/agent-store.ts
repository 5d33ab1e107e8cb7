import type {
  AgentStore,
  StoredAgent,
  StoredAgentEvidence,
  StoredAgentGrant,
  StoredAgentTransfer,
  StoredEnrollment,
} from '../interface.js';
import { changedOne, firstRow, type Sql } from '../sql.js';

interface EnrollmentRow {
  enrollment_id: string;
  name: string;
  subject_kind: string;
  public_jwk: string;
  jkt: string;
  alg: string;
  visibility: string;
  owner_code_hash: string;
  state: string;
  owner_id: string | null;
  approved_at: number | null;
  agent_id: string | null;
  created_at: number;
  expires_at: number;
}

interface AgentRow {
  agent_id: string;
  proof_id: string;
  owner_id: string;
  name: string;
  subject_kind: string;
  public_jwk: string;
  jkt: string;
  alg: string;
  state: string;
  visibility: string;
  declared: string;
  resume_needs_key: number;
  key_proven_at: number | null;
  owner_approved_at: number | null;
  last_proof_at: number | null;
  created_at: number;
  updated_at: number;
}

interface AgentEvidenceRow {
  agent_id: string;
  type: string;
  at: number;
  expires_at: number;
  detail: string;
}

interface TransferRow {
  agent_id: string;
  from_owner_id: string;
  to_identity_id: string;
  code_hash: string;
  created_at: number;
  expires_at: number;
}

interface AgentGrantRow {
  grant_id: string;
  agent_id: string;
  owner_id: string;
  client_id: string;
  resource: string | null;
  scope: string;
  created_at: number;
  revoked_at: number | null;
}

/** What an enrollment hands on to its agent: the name, the kind of subject and the key. */
const agentKeyFromRow = (
  row: Pick<AgentRow, 'name' | 'subject_kind' | 'public_jwk' | 'jkt' | 'alg' | 'visibility'>,
) => ({
  name: row.name,
  subjectKind: row.subject_kind as StoredAgent['subjectKind'],
  publicJwk: JSON.parse(row.public_jwk) as StoredAgent['publicJwk'],
  jkt: row.jkt,
  alg: row.alg as StoredAgent['alg'],
  visibility: row.visibility as StoredAgent['visibility'],
});

const enrollmentFromRow = (row: EnrollmentRow): StoredEnrollment => ({
  ...agentKeyFromRow(row),
  enrollmentId: row.enrollment_id,
  ownerCodeHash: row.owner_code_hash,
  state: row.state as StoredEnrollment['state'],
  ownerId: row.owner_id,
  approvedAt: row.approved_at,
  agentId: row.agent_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

const agentFromRow = (row: AgentRow): StoredAgent => ({
  agentId: row.agent_id,
  proofId: row.proof_id,
  ownerId: row.owner_id,
  ...agentKeyFromRow(row),
  state: row.state as StoredAgent['state'],
  declared: JSON.parse(row.declared),
  resumeNeedsKey: row.resume_needs_key === 1,
  keyProvenAt: row.key_proven_at,
  ownerApprovedAt: row.owner_approved_at,
  lastProofAt: row.last_proof_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const agentGrantFromRow = (row: AgentGrantRow): StoredAgentGrant => ({
  grantId: row.grant_id,
  agentId: row.agent_id,
  ownerId: row.owner_id,
  clientId: row.client_id,
  resource: row.resource,
  scope: row.scope,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
});

const agentEvidenceFromRow = (row: AgentEvidenceRow): StoredAgentEvidence => ({
  agentId: row.agent_id,
  type: row.type as StoredAgentEvidence['type'],
  at: row.at,
  expiresAt: row.expires_at,
  detail: JSON.parse(row.detail),
});

const transferFromRow = (row: TransferRow): StoredAgentTransfer => ({
  agentId: row.agent_id,
  fromOwnerId: row.from_owner_id,
  toIdentityId: row.to_identity_id,
  codeHash: row.code_hash,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

/** The agent columns after agent_id, in the order of the INSERT and the UPDATE below. */
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

export function agentStore(sql: Sql): AgentStore {
  const RECORD_PROOF = `UPDATE agents SET last_proof_at = ${sql.dialect.greatest('COALESCE(last_proof_at, 0)', '$2')} WHERE agent_id = $1`;
  return {
    insertEnrollment: async (e) => {
      await sql.count(
        `INSERT INTO agent_enrollments (enrollment_id, name, subject_kind, public_jwk, jkt, alg, visibility, owner_code_hash, state, owner_id, approved_at, agent_id, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [
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
        ],
      );
    },
    getEnrollment: (id) =>
      firstRow(sql, 'SELECT * FROM agent_enrollments WHERE enrollment_id = $1', [id], enrollmentFromRow),
    approveEnrollment: (id, ownerId, at) =>
      changedOne(
        sql,
        `UPDATE agent_enrollments SET state = 'approved', owner_id = $2, approved_at = $3 WHERE enrollment_id = $1 AND state = 'pending_approval' AND expires_at > $3`,
        [id, ownerId, at],
      ),
    completeEnrollment: (id, agentId, at) =>
      changedOne(
        sql,
        `UPDATE agent_enrollments SET state = 'completed', agent_id = $2 WHERE enrollment_id = $1 AND state = 'approved' AND expires_at > $3`,
        [id, agentId, at],
      ),
    listApprovedEnrollments: async (ownerId, now) =>
      (
        await sql.rows<EnrollmentRow>(
          `SELECT * FROM agent_enrollments WHERE owner_id = $1 AND state = 'approved' AND expires_at > $2 ORDER BY created_at`,
          [ownerId, now],
        )
      ).map(enrollmentFromRow),
    insertAgent: async (a) => {
      await sql.count(
        `INSERT INTO agents (agent_id, proof_id, owner_id, name, subject_kind, public_jwk, jkt, alg, state, visibility, declared, resume_needs_key, key_proven_at, owner_approved_at, last_proof_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
        [a.agentId, ...agentParams(a)],
      );
    },
    get: (agentId) => firstRow(sql, 'SELECT * FROM agents WHERE agent_id = $1', [agentId], agentFromRow),
    getByProofId: (proofId) => firstRow(sql, 'SELECT * FROM agents WHERE proof_id = $1', [proofId], agentFromRow),
    // A range on the primary key.
    listPage: async ({ after, limit }) =>
      (
        await sql.rows<AgentRow>('SELECT * FROM agents WHERE agent_id > $1 ORDER BY agent_id LIMIT $2', [
          after ?? '',
          limit,
        ])
      ).map(agentFromRow),
    listByOwner: async (ownerId) =>
      (
        await sql.rows<AgentRow>('SELECT * FROM agents WHERE owner_id = $1 ORDER BY created_at, agent_id', [ownerId])
      ).map(agentFromRow),
    // Compare-and-set on the state the caller read: of two concurrent transitions one wins.
    update: (a, expectedState) =>
      changedOne(
        sql,
        `UPDATE agents SET proof_id = $1, owner_id = $2, name = $3, subject_kind = $4, public_jwk = $5, jkt = $6, alg = $7, state = $8, visibility = $9, declared = $10,
           resume_needs_key = $11, key_proven_at = $12, owner_approved_at = $13, last_proof_at = $14, created_at = $15, updated_at = $16 WHERE agent_id = $17 AND state = $18`,
        [...agentParams(a), a.agentId, expectedState],
      ),
    recordProof: async (agentId, at) => {
      await sql.count(RECORD_PROOF, [agentId, at]);
    },
    appendEvidence: async (e) => {
      await sql.count(
        'INSERT INTO agent_evidence (agent_id, type, at, expires_at, detail) VALUES ($1, $2, $3, $4, $5)',
        [e.agentId, e.type, e.at, e.expiresAt, JSON.stringify(e.detail)],
      );
    },
    listEvidence: async (agentId) =>
      (
        await sql.rows<AgentEvidenceRow>('SELECT * FROM agent_evidence WHERE agent_id = $1 ORDER BY seq', [agentId])
      ).map(agentEvidenceFromRow),
    putTransfer: async (t) => {
      await sql.count(
        `INSERT INTO agent_transfers (agent_id, from_owner_id, to_identity_id, code_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (agent_id) DO UPDATE SET from_owner_id = excluded.from_owner_id, to_identity_id = excluded.to_identity_id, code_hash = excluded.code_hash,
           created_at = excluded.created_at, expires_at = excluded.expires_at`,
        [t.agentId, t.fromOwnerId, t.toIdentityId, t.codeHash, t.createdAt, t.expiresAt],
      );
    },
    getTransfer: (agentId) =>
      firstRow(sql, 'SELECT * FROM agent_transfers WHERE agent_id = $1', [agentId], transferFromRow),
    // One DELETE: of two replicas accepting the same transfer, one removes the row.
    consumeTransfer: (agentId, codeHash, toIdentityId, now) =>
      changedOne(
        sql,
        'DELETE FROM agent_transfers WHERE agent_id = $1 AND code_hash = $2 AND to_identity_id = $3 AND expires_at > $4',
        [agentId, codeHash, toIdentityId, now],
      ),
    deleteTransfer: async (agentId) => {
      await sql.count('DELETE FROM agent_transfers WHERE agent_id = $1', [agentId]);
    },
    insertGrant: async (g) => {
      await sql.count(
        'INSERT INTO agent_grants (grant_id, agent_id, owner_id, client_id, resource, scope, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        [g.grantId, g.agentId, g.ownerId, g.clientId, g.resource, g.scope, g.createdAt, g.revokedAt],
      );
    },
    getGrant: (grantId) =>
      firstRow(sql, 'SELECT * FROM agent_grants WHERE grant_id = $1', [grantId], agentGrantFromRow),
    listGrants: async (agentId) =>
      (
        await sql.rows<AgentGrantRow>('SELECT * FROM agent_grants WHERE agent_id = $1 ORDER BY created_at, grant_id', [
          agentId,
        ])
      ).map(agentGrantFromRow),
    revokeGrant: (grantId, at) =>
      changedOne(sql, 'UPDATE agent_grants SET revoked_at = $2 WHERE grant_id = $1 AND revoked_at IS NULL', [
        grantId,
        at,
      ]),
    revokeGrants: (agentId, at) =>
      sql.count('UPDATE agent_grants SET revoked_at = $2 WHERE agent_id = $1 AND revoked_at IS NULL', [agentId, at]),
  };
}
