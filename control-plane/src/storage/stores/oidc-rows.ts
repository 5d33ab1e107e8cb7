import type { StoredAuthorizationCode, StoredGrant, StoredRefreshToken } from '../interface.js';

/**
 * The rows of the OIDC store (codes, grants, refresh tokens, approvals), the same on both
 * backends. `…ToRow` gives the insert parameters keyed by column; `…FromRow` reads a row back.
 */

type Nullable<T> = T | null;

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
  source_grant_id: Nullable<string>;
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
  source_grant_id: g.sourceGrantId ?? null,
});

export const grantFromRow = (row: GrantRow): StoredGrant => ({
  ...signInFromRow(row),
  grantId: row.grant_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  revokedAt: row.revoked_at,
  offline: row.offline === 1,
  ...(row.source_grant_id ? { sourceGrantId: row.source_grant_id } : {}),
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
