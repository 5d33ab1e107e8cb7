import type { OrgRule } from '../../../lib/access/evaluate-access.js';
import type {
  KeyState,
  StoredAuthorizationCode,
  StoredCheckpoint,
  BackchannelLogout,
  StoredClient,
  StoredGrant,
  StoredProject,
  StoredRolloutDocument,
  StoredReceipt,
  StoredRefreshToken,
  OrgInvite,
  OrgMember,
  OrgRole,
  OrgSite,
  StoredAgent,
  StoredAgentEvidence,
  StoredAgentGrant,
  StoredAgentTransfer,
  StoredEnrollment,
  StoredOrg,
  StoredScan,
  StoredSamlKey,
  StoredSamlProvider,
} from './types.js';

/**
 * The row shape of every table, shared by both backends: the SQLite and PostgreSQL schemas use
 * the same column names and the same encodings (epoch milliseconds as integers, booleans as
 * 0/1, JSON as text, byte strings as BLOB/BYTEA), so one mapper per resource serves both.
 * `…ToRow` gives the insert parameters keyed by column; `…FromRow` reads a selected row back.
 */

type Nullable<T> = T | null;

export interface ReceiptRow {
  hash: string;
  body: string;
  tree_key: Buffer;
  created_at: number;
  epoch: Nullable<number>;
  tree_index: Nullable<number>;
  path: Nullable<Buffer>;
}

export const receiptFromRow = (row: ReceiptRow): StoredReceipt => ({
  hash: row.hash,
  body: row.body,
  treeKey: row.tree_key,
  createdAt: row.created_at,
  epoch: row.epoch,
  index: row.tree_index,
  path: row.path === null ? null : splitPath(row.path),
});

export interface CheckpointRow {
  epoch: number;
  jws: string;
  root: string;
  size: number;
  prev: Nullable<string>;
  sealed_at: number;
}

export const checkpointFromRow = (row: CheckpointRow): StoredCheckpoint => ({
  epoch: row.epoch,
  jws: row.jws,
  root: row.root,
  size: row.size,
  prev: row.prev,
  sealedAt: row.sealed_at,
});

/** Audit paths are stored as one byte string: the 32-byte hashes back to back. */
export const HASH_SIZE = 32;

export function splitPath(blob: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < blob.length; i += HASH_SIZE) out.push(Buffer.from(blob.subarray(i, i + HASH_SIZE)));
  return out;
}

export interface ClientRow {
  client_id: string;
  client_type: string;
  auth_method: string;
  secret_hash: Nullable<string>;
  secret_issued_at: Nullable<number>;
  metadata: string;
  owner_id: Nullable<string>;
  registration_token_hash: string;
  revision: number;
  created_at: number;
  updated_at: number;
}

export const clientToRow = (c: StoredClient): ClientRow => ({
  client_id: c.clientId,
  client_type: c.type,
  auth_method: c.metadata.token_endpoint_auth_method,
  secret_hash: c.secretHash,
  secret_issued_at: c.secretIssuedAt,
  metadata: JSON.stringify(c.metadata),
  owner_id: c.ownerId,
  registration_token_hash: c.registrationTokenHash,
  revision: c.revision,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

export const clientFromRow = (row: ClientRow): StoredClient => ({
  clientId: row.client_id,
  type: row.client_type as StoredClient['type'],
  metadata: JSON.parse(row.metadata),
  secretHash: row.secret_hash,
  secretIssuedAt: row.secret_issued_at,
  ownerId: row.owner_id,
  registrationTokenHash: row.registration_token_hash,
  revision: row.revision,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export interface CodeRow {
  code_hash: string;
  client_id: string;
  redirect_uri: string;
  identity_id: string;
  session_id: string;
  scope: string;
  resource: Nullable<string>;
  nonce: Nullable<string>;
  code_challenge: string;
  dpop_jkt: Nullable<string>;
  assurance: string;
  amr: string;
  auth_time: number;
  created_at: number;
  expires_at: number;
  consumed_at: Nullable<number>;
  grant_id: Nullable<string>;
  /** 1 when the code carries offline_access (its grant outlives the session), else 0. */
  offline: number;
}

export interface GrantRow {
  grant_id: string;
  client_id: string;
  identity_id: string;
  session_id: string;
  scope: string;
  resource: Nullable<string>;
  assurance: string;
  amr: string;
  auth_time: number;
  created_at: number;
  expires_at: number;
  revoked_at: Nullable<number>;
  offline: number;
}

export interface RefreshRow {
  token_hash: string;
  grant_id: string;
  dpop_jkt: Nullable<string>;
  created_at: number;
  idle_expires_at: number;
  used_at: Nullable<number>;
}

/** The columns a code hands on to its grant: who signed in, to which client, with what. */
type SignInColumns = Pick<
  GrantRow,
  'client_id' | 'identity_id' | 'session_id' | 'scope' | 'resource' | 'assurance' | 'amr' | 'auth_time'
>;
type SignIn = Pick<
  StoredGrant,
  'clientId' | 'identityId' | 'sessionId' | 'scope' | 'resource' | 'assurance' | 'amr' | 'authTime'
>;

const signInToRow = (s: SignIn): SignInColumns => ({
  client_id: s.clientId,
  identity_id: s.identityId,
  session_id: s.sessionId,
  scope: s.scope,
  resource: s.resource,
  assurance: s.assurance,
  amr: JSON.stringify(s.amr),
  auth_time: s.authTime,
});

const signInFromRow = (row: SignInColumns): SignIn => ({
  clientId: row.client_id,
  identityId: row.identity_id,
  sessionId: row.session_id,
  scope: row.scope,
  resource: row.resource,
  assurance: row.assurance as StoredGrant['assurance'],
  amr: JSON.parse(row.amr) as string[],
  authTime: row.auth_time,
});

export const codeToRow = (c: StoredAuthorizationCode): CodeRow => ({
  ...signInToRow(c),
  code_hash: c.codeHash,
  redirect_uri: c.redirectUri,
  nonce: c.nonce,
  code_challenge: c.codeChallenge,
  dpop_jkt: c.dpopJkt,
  created_at: c.createdAt,
  expires_at: c.expiresAt,
  consumed_at: c.consumedAt,
  grant_id: c.grantId,
  offline: c.offline ? 1 : 0,
});

export const codeFromRow = (row: CodeRow): StoredAuthorizationCode => ({
  ...signInFromRow(row),
  codeHash: row.code_hash,
  redirectUri: row.redirect_uri,
  nonce: row.nonce,
  codeChallenge: row.code_challenge,
  dpopJkt: row.dpop_jkt,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  consumedAt: row.consumed_at,
  grantId: row.grant_id,
  offline: row.offline === 1,
});

export const grantToRow = (g: StoredGrant): GrantRow => ({
  ...signInToRow(g),
  grant_id: g.grantId,
  created_at: g.createdAt,
  expires_at: g.expiresAt,
  revoked_at: g.revokedAt,
  offline: g.offline ? 1 : 0,
});

export const grantFromRow = (row: GrantRow): StoredGrant => ({
  ...signInFromRow(row),
  grantId: row.grant_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  revokedAt: row.revoked_at,
  offline: row.offline === 1,
});

export const refreshToRow = (t: StoredRefreshToken): RefreshRow => ({
  token_hash: t.tokenHash,
  grant_id: t.grantId,
  dpop_jkt: t.dpopJkt,
  created_at: t.createdAt,
  idle_expires_at: t.idleExpiresAt,
  used_at: t.usedAt,
});

export const refreshFromRow = (row: RefreshRow): StoredRefreshToken => ({
  tokenHash: row.token_hash,
  grantId: row.grant_id,
  dpopJkt: row.dpop_jkt,
  createdAt: row.created_at,
  idleExpiresAt: row.idle_expires_at,
  usedAt: row.used_at,
});

/** A refresh token joined with its grant: the token's own columns that clash are prefixed `t_`. */
export type RefreshGrantRow = GrantRow & {
  token_hash: string;
  t_dpop_jkt: Nullable<string>;
  t_created_at: number;
  idle_expires_at: number;
  used_at: Nullable<number>;
};

export const REFRESH_GRANT_COLUMNS =
  't.token_hash, t.dpop_jkt AS t_dpop_jkt, t.created_at AS t_created_at, t.idle_expires_at, t.used_at, g.*';

export const refreshGrantFromRow = (row: RefreshGrantRow): { token: StoredRefreshToken; grant: StoredGrant } => ({
  token: {
    tokenHash: row.token_hash,
    grantId: row.grant_id,
    dpopJkt: row.t_dpop_jkt,
    createdAt: row.t_created_at,
    idleExpiresAt: row.idle_expires_at,
    usedAt: row.used_at,
  },
  grant: grantFromRow(row),
});

/** A consent: the scopes as one space-separated string, the resources (RFC 8707) as a JSON array. */
export interface ApprovalRow {
  scope: string;
  resources: string;
}

export const approvalFromRow = (row: ApprovalRow) => ({
  scopes: row.scope.split(' ').filter(Boolean),
  resources: JSON.parse(row.resources) as string[],
});

// Agents (docs/agents.md).

export interface EnrollmentRow {
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

export interface AgentRow {
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

export interface AgentEvidenceRow {
  agent_id: string;
  type: string;
  at: number;
  expires_at: number;
  detail: string;
}
export interface TransferRow {
  agent_id: string;
  from_owner_id: string;
  to_identity_id: string;
  code_hash: string;
  created_at: number;
  expires_at: number;
}
export interface AgentGrantRow {
  grant_id: string;
  agent_id: string;
  owner_id: string;
  client_id: string;
  resource: string | null;
  scope: string;
  created_at: number;
  revoked_at: number | null;
}

export const enrollmentFromRow = (row: EnrollmentRow): StoredEnrollment => ({
  enrollmentId: row.enrollment_id,
  name: row.name,
  subjectKind: row.subject_kind as StoredEnrollment['subjectKind'],
  publicJwk: JSON.parse(row.public_jwk),
  jkt: row.jkt,
  alg: row.alg as StoredEnrollment['alg'],
  visibility: row.visibility as StoredEnrollment['visibility'],
  ownerCodeHash: row.owner_code_hash,
  state: row.state as StoredEnrollment['state'],
  ownerId: row.owner_id,
  approvedAt: row.approved_at,
  agentId: row.agent_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

export const agentFromRow = (row: AgentRow): StoredAgent => ({
  agentId: row.agent_id,
  proofId: row.proof_id,
  ownerId: row.owner_id,
  name: row.name,
  subjectKind: row.subject_kind as StoredAgent['subjectKind'],
  publicJwk: JSON.parse(row.public_jwk),
  jkt: row.jkt,
  alg: row.alg as StoredAgent['alg'],
  state: row.state as StoredAgent['state'],
  visibility: row.visibility as StoredAgent['visibility'],
  declared: JSON.parse(row.declared),
  resumeNeedsKey: row.resume_needs_key === 1,
  keyProvenAt: row.key_proven_at,
  ownerApprovedAt: row.owner_approved_at,
  lastProofAt: row.last_proof_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export const agentGrantFromRow = (row: AgentGrantRow): StoredAgentGrant => ({
  grantId: row.grant_id,
  agentId: row.agent_id,
  ownerId: row.owner_id,
  clientId: row.client_id,
  resource: row.resource,
  scope: row.scope,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
});

export const agentEvidenceFromRow = (row: AgentEvidenceRow): StoredAgentEvidence => ({
  agentId: row.agent_id,
  type: row.type as StoredAgentEvidence['type'],
  at: row.at,
  expiresAt: row.expires_at,
  detail: JSON.parse(row.detail),
});

export const transferFromRow = (row: TransferRow): StoredAgentTransfer => ({
  agentId: row.agent_id,
  fromOwnerId: row.from_owner_id,
  toIdentityId: row.to_identity_id,
  codeHash: row.code_hash,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

// Organizations, their sites and scans (docs/orgs.md).

export interface OrgRow {
  org_id: string;
  slug: string;
  name: string;
  website: string | null;
  created_at: number;
}
export interface MemberRow {
  identity_id: string;
  role: OrgRole;
  added_at: number;
}
export interface InviteRow {
  org_id: string;
  identity_id: string;
  role: OrgRole;
  invited_by: string;
  created_at: number;
}
export interface SiteRow {
  site_id: string;
  org_id: string;
  url: string;
  origin: string;
  label: string | null;
  is_primary: number;
  proof_token: string;
  verified_at: number | null;
  created_at: number;
}
export interface ScanRow {
  scan_id: string;
  site_id: string | null;
  url: string;
  grade: string;
  score: number;
  rating: string;
  scanned_at: number;
}

export const orgFromRow = (r: OrgRow): StoredOrg => ({
  orgId: r.org_id,
  slug: r.slug,
  name: r.name,
  website: r.website,
  createdAt: r.created_at,
});
export const memberFromRow = (r: MemberRow): OrgMember => ({
  identityId: r.identity_id,
  role: r.role,
  addedAt: r.added_at,
});
export const inviteFromRow = (r: InviteRow): OrgInvite => ({
  orgId: r.org_id,
  identityId: r.identity_id,
  role: r.role,
  invitedBy: r.invited_by,
  createdAt: r.created_at,
});
export const siteFromRow = (r: SiteRow): OrgSite => ({
  siteId: r.site_id,
  orgId: r.org_id,
  url: r.url,
  label: r.label,
  primary: r.is_primary === 1,
  proofToken: r.proof_token,
  verifiedAt: r.verified_at,
  createdAt: r.created_at,
});
export const scanFromRow = (r: ScanRow): StoredScan => ({
  scanId: r.scan_id,
  siteId: r.site_id,
  url: r.url,
  grade: r.grade,
  score: r.score,
  rating: r.rating,
  scannedAt: r.scanned_at,
});

export interface SamlKeyRow {
  kid: string;
  state: string;
  certificate_pem: string;
  sealed_private_key: Buffer;
  created_at: number;
  activated_at: Nullable<number>;
  retired_at: Nullable<number>;
  not_after: number;
}

export const samlKeyToRow = (key: StoredSamlKey): SamlKeyRow => ({
  kid: key.kid,
  state: key.state,
  certificate_pem: key.certificatePem,
  sealed_private_key: key.sealedPrivateKey,
  created_at: key.createdAt,
  activated_at: key.activatedAt,
  retired_at: key.retiredAt,
  not_after: key.notAfter,
});

export const samlKeyFromRow = (row: SamlKeyRow): StoredSamlKey => ({
  kid: row.kid,
  state: row.state as KeyState,
  certificatePem: row.certificate_pem,
  sealedPrivateKey: Buffer.from(row.sealed_private_key),
  createdAt: Number(row.created_at),
  activatedAt: row.activated_at === null ? null : Number(row.activated_at),
  retiredAt: row.retired_at === null ? null : Number(row.retired_at),
  notAfter: Number(row.not_after),
});

export interface SamlProviderRow {
  id: string;
  entity_id: string;
  name: Nullable<string>;
  acs_urls: string;
  slo_url: Nullable<string>;
  certificate_pem: string;
  name_id_format: string;
  attributes: string;
  allow_idp_initiated: number;
  want_signed_requests: number;
  access_orgs: Nullable<string>;
  org_id: Nullable<string>;
  revision: number;
  created_at: number;
  updated_at: number;
}

// ---- rollout documents and projects ----

export interface RolloutDocumentRow {
  kind: string;
  project: string;
  version: number;
  document: string;
  jws: string;
  hash: string;
  content_hash: string;
  kid: string;
  created_at: number;
}

export const rolloutDocumentToRow = (d: StoredRolloutDocument): RolloutDocumentRow => ({
  kind: d.kind,
  project: d.project,
  version: d.version,
  document: JSON.stringify(d.document),
  jws: d.jws,
  hash: d.hash,
  content_hash: d.contentHash,
  kid: d.kid,
  created_at: d.createdAt,
});

export const rolloutDocumentFromRow = (row: RolloutDocumentRow): StoredRolloutDocument => ({
  kind: row.kind as StoredRolloutDocument['kind'],
  project: row.project,
  version: Number(row.version),
  document: JSON.parse(row.document),
  jws: row.jws,
  hash: row.hash,
  contentHash: row.content_hash,
  kid: row.kid,
  createdAt: Number(row.created_at),
});

export interface ProjectRow {
  project: string;
  client_id: string | null;
  verification: string | null;
  attestation: string | null;
  created_at: number;
  updated_at: number;
}

export const samlProviderToRow = (p: StoredSamlProvider): SamlProviderRow => ({
  id: p.id,
  entity_id: p.entityId,
  name: p.name,
  acs_urls: JSON.stringify(p.acsUrls),
  slo_url: p.sloUrl,
  certificate_pem: p.certificatePem,
  name_id_format: p.nameIdFormat,
  attributes: JSON.stringify(p.attributes),
  allow_idp_initiated: p.allowIdpInitiated ? 1 : 0,
  want_signed_requests: p.wantSignedRequests ? 1 : 0,
  access_orgs: p.accessOrgs === null ? null : JSON.stringify(p.accessOrgs),
  org_id: p.orgId,
  revision: p.revision,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
});

export const samlProviderFromRow = (row: SamlProviderRow): StoredSamlProvider => ({
  id: row.id,
  entityId: row.entity_id,
  name: row.name,
  acsUrls: JSON.parse(row.acs_urls) as string[],
  sloUrl: row.slo_url,
  certificatePem: row.certificate_pem,
  nameIdFormat: row.name_id_format,
  attributes: JSON.parse(row.attributes) as Record<string, string>,
  allowIdpInitiated: Number(row.allow_idp_initiated) === 1,
  wantSignedRequests: Number(row.want_signed_requests) === 1,
  accessOrgs:
    row.access_orgs === null || row.access_orgs === undefined ? null : (JSON.parse(row.access_orgs) as OrgRule[]),
  orgId: row.org_id,
  revision: Number(row.revision),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export const projectFromRow = (row: ProjectRow): StoredProject => ({
  project: row.project,
  clientId: row.client_id,
  verification: row.verification === null ? null : JSON.parse(row.verification),
  attestation: row.attestation === null ? null : JSON.parse(row.attestation),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export interface BackchannelLogoutRow {
  logout_id: string;
  client_id: string;
  identity_id: string;
  session_id: string;
  jti: string;
  created_at: number;
  attempts: number;
  next_attempt_at: number;
  state: BackchannelLogout['state'];
  last_error: Nullable<string>;
  finished_at: Nullable<number>;
}

export const logoutToRow = (l: BackchannelLogout): BackchannelLogoutRow => ({
  logout_id: l.logoutId,
  client_id: l.clientId,
  identity_id: l.identityId,
  session_id: l.sessionId,
  jti: l.jti,
  created_at: l.createdAt,
  attempts: l.attempts,
  next_attempt_at: l.nextAttemptAt,
  state: l.state,
  last_error: l.lastError,
  finished_at: l.finishedAt,
});

export const logoutFromRow = (row: BackchannelLogoutRow): BackchannelLogout => ({
  logoutId: row.logout_id,
  clientId: row.client_id,
  identityId: row.identity_id,
  sessionId: row.session_id,
  jti: row.jti,
  createdAt: row.created_at,
  attempts: row.attempts,
  nextAttemptAt: row.next_attempt_at,
  state: row.state,
  lastError: row.last_error,
  finishedAt: row.finished_at,
});
