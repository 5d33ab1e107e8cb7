CREATE TABLE agent_enrollments (
  enrollment_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  subject_kind TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  jkt TEXT NOT NULL,
  alg TEXT NOT NULL CHECK (alg IN ('ES256', 'EdDSA')),
  visibility TEXT NOT NULL CHECK (visibility IN ('private', 'unlisted', 'public')),
  owner_code_hash TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('pending_approval', 'approved', 'completed', 'expired')),
  owner_id TEXT,
  approved_at BIGINT,
  agent_id TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX agent_enrollments_by_owner ON agent_enrollments (owner_id, state);
CREATE TABLE agents (
  agent_id TEXT PRIMARY KEY,
  proof_id TEXT NOT NULL UNIQUE,
  owner_id TEXT NOT NULL,
  name TEXT NOT NULL,
  subject_kind TEXT NOT NULL,
  public_jwk TEXT NOT NULL,
  jkt TEXT NOT NULL,
  alg TEXT NOT NULL CHECK (alg IN ('ES256', 'EdDSA')),
  state TEXT NOT NULL CHECK (state IN ('active', 'suspended', 'compromised', 'revoked')),
  visibility TEXT NOT NULL CHECK (visibility IN ('private', 'unlisted', 'public')),
  declared TEXT NOT NULL DEFAULT '{}',
  resume_needs_key INTEGER NOT NULL DEFAULT 0 CHECK (resume_needs_key IN (0, 1)),
  key_proven_at BIGINT,
  owner_approved_at BIGINT,
  last_proof_at BIGINT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX agents_by_owner ON agents (owner_id, created_at);
-- Appended, never updated: each entry ages on its own.
CREATE TABLE agent_evidence (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  agent_id TEXT NOT NULL,
  type TEXT NOT NULL CHECK (type IN ('domain-control', 'descriptor-integrity')),
  at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  detail TEXT NOT NULL
);
CREATE INDEX agent_evidence_by_agent ON agent_evidence (agent_id, seq);
CREATE TABLE agent_transfers (
  agent_id TEXT PRIMARY KEY,
  from_owner_id TEXT NOT NULL,
  to_identity_id TEXT NOT NULL,
  code_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE agent_grants (
  grant_id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  owner_id TEXT NOT NULL,
  client_id TEXT NOT NULL,
  resource TEXT,
  scope TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT
);
CREATE INDEX agent_grants_by_agent ON agent_grants (agent_id);
