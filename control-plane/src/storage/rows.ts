import type { OrgRule } from '../../../lib/access/evaluate-access.js';
import type {
  KeyState,
  StoredAuthorizationCode,
  StoredCheckpoint,
  StoredClient,
  StoredGrant,
  StoredReceipt,
  StoredRefreshToken,
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

// Organizations, their sites and scans (docs/orgs.md).

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

