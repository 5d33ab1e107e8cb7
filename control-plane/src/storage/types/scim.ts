// SCIM 2.0 per org (docs/scim.md): the org's bearer tokens and the accounts it provisioned.

/** A SCIM token of an org; the secret is stored only as its SHA-256 (hex). */
export interface StoredScimToken {
  tokenId: string;
  orgId: string;
  secretHash: string;
  /** The owner who created it (identity id). */
  createdBy: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** A provisioned account as SCIM sees it: `attributes` holds the resource's other attributes as sent. */
export interface ScimUserRecord {
  identityId: string;
  orgId: string;
  /** As sent; unique per org once folded (`userNameKey`). */
  userName: string;
  userNameKey: string;
  externalId: string | null;
  attributes: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
  /** Read from the account: when the org suspended it (SCIM `active: false`); ignored on writes. */
  suspendedAt?: number | null;
}

export interface ScimStore {
  addToken(token: StoredScimToken): Promise<void>;
  token(tokenId: string): Promise<StoredScimToken | null>;
  /** The org's tokens, revoked ones too, oldest first. */
  tokens(orgId: string): Promise<StoredScimToken[]>;
  /** False when the org has no such live token. */
  revokeToken(orgId: string, tokenId: string, at: number): Promise<boolean>;
  /** Records a use; writes at most once a minute per token. */
  touchToken(tokenId: string, at: number): Promise<void>;
  /** False when the org has a user with this folded userName already. */
  addUser(user: ScimUserRecord): Promise<boolean>;
  user(orgId: string, identityId: string): Promise<ScimUserRecord | null>;
  /** The index look-up behind `userName eq "…"`. */
  userByName(orgId: string, userNameKey: string): Promise<ScimUserRecord | null>;
  usersByExternalId(orgId: string, externalId: string): Promise<ScimUserRecord[]>;
  /** Every user the org provisioned, oldest first. */
  users(orgId: string): Promise<ScimUserRecord[]>;
  /** One page of `users` (the same order): `offset` users skipped, at most `limit` read. */
  usersPage(orgId: string, offset: number, limit: number): Promise<ScimUserRecord[]>;
  /** How many users the org provisioned. */
  countUsers(orgId: string): Promise<number>;
  /** Replaces the record (by identity id); false when another user holds the folded userName. */
  updateUser(user: ScimUserRecord): Promise<boolean>;
  /** Sets (or with null clears) the externalId of a Group, that is of the org's team `teamId`. */
  setGroupExternalId(orgId: string, teamId: string, externalId: string | null): Promise<void>;
  groupExternalId(teamId: string): Promise<string | null>;
  /** The externalIds of the org's Groups, by team id. */
  groupExternalIds(orgId: string): Promise<Map<string, string>>;
  /** The index look-up behind `externalId eq "…"` on /Groups: the team ids, oldest first. */
  groupsByExternalId(orgId: string, externalId: string): Promise<string[]>;
}
