import type { ScimStore, ScimUserRecord, StoredScimToken } from '../interface.js';
import { changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface TokenRow {
  token_id: string;
  org_id: string;
  secret_hash: string;
  created_by: string;
  created_at: number | string;
  last_used_at: number | string | null;
  revoked_at: number | string | null;
}

interface UserRow {
  identity_id: string;
  org_id: string;
  user_name: string;
  user_name_key: string;
  external_id: string | null;
  attributes: string;
  created_at: number | string;
  updated_at: number | string;
  suspended_at?: number | string | null;
}

const orNull = (value: number | string | null) => (value === null ? null : Number(value));

const tokenFromRow = (r: TokenRow): StoredScimToken => ({
  tokenId: r.token_id,
  orgId: r.org_id,
  secretHash: r.secret_hash,
  createdBy: r.created_by,
  createdAt: Number(r.created_at),
  lastUsedAt: orNull(r.last_used_at),
  revokedAt: orNull(r.revoked_at),
});

const userFromRow = (r: UserRow): ScimUserRecord => ({
  identityId: r.identity_id,
  orgId: r.org_id,
  userName: r.user_name,
  userNameKey: r.user_name_key,
  externalId: r.external_id,
  attributes: JSON.parse(r.attributes) as Record<string, unknown>,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
  suspendedAt: orNull(r.suspended_at ?? null),
});

const userToRow = (u: ScimUserRecord): Omit<UserRow, 'suspended_at'> => ({
  identity_id: u.identityId,
  org_id: u.orgId,
  user_name: u.userName,
  user_name_key: u.userNameKey,
  external_id: u.externalId,
  attributes: JSON.stringify(u.attributes),
  created_at: u.createdAt,
  updated_at: u.updatedAt,
});

const TOUCH_EVERY_MS = 60_000;

/** A user with its account's suspension flag. */
const USERS = 'SELECT s.*, i.suspended_at FROM scim_users s JOIN identities i ON i.identity_id = s.identity_id';

/** The look-up behind `userName eq "…"`: the unique index on (org_id, user_name_key), never a scan. */
export const USER_BY_NAME = `${USERS} WHERE s.org_id = $1 AND s.user_name_key = $2`;

/** The look-up behind `externalId eq "…"` on /Groups: the index on (org_id, external_id), never a scan. */
export const GROUPS_BY_EXTERNAL_ID = `SELECT g.team_id FROM scim_groups g JOIN org_teams t ON t.team_id = g.team_id
  WHERE g.org_id = $1 AND g.external_id = $2 ORDER BY t.created_at, g.team_id`;

export function scimStore(sql: Sql): ScimStore {
  const user = (text: string, values: unknown[]) => firstRow(sql, text, values, userFromRow);
  /** A unique violation on (org_id, user_name_key) is the answer false, anything else a failure. */
  const unlessTaken = async (write: (tx: Sql) => Promise<number>) => {
    try {
      return (await sql.atomic(write)) === 1;
    } catch (error) {
      if (sql.dialect.isUniqueViolation(error)) return false;
      throw error;
    }
  };
  return {
    addToken: async (token) => {
      await sql.count(
        ...insertOf('scim_tokens', {
          token_id: token.tokenId,
          org_id: token.orgId,
          secret_hash: token.secretHash,
          created_by: token.createdBy,
          created_at: token.createdAt,
          last_used_at: token.lastUsedAt,
          revoked_at: token.revokedAt,
        }),
      );
    },
    token: (tokenId) => firstRow(sql, 'SELECT * FROM scim_tokens WHERE token_id = $1', [tokenId], tokenFromRow),
    tokens: async (orgId) =>
      (
        await sql.rows<TokenRow>('SELECT * FROM scim_tokens WHERE org_id = $1 ORDER BY created_at, token_id', [orgId])
      ).map(tokenFromRow),
    revokeToken: (orgId, tokenId, at) =>
      changedOne(
        sql,
        'UPDATE scim_tokens SET revoked_at = $3 WHERE org_id = $1 AND token_id = $2 AND revoked_at IS NULL',
        [orgId, tokenId, at],
      ),
    touchToken: async (tokenId, at) => {
      await sql.count(
        'UPDATE scim_tokens SET last_used_at = $2 WHERE token_id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)',
        [tokenId, at, at - TOUCH_EVERY_MS],
      );
    },
    addUser: (record) => unlessTaken((tx) => tx.count(...insertOf('scim_users', userToRow(record)))),
    user: (orgId, identityId) => user(`${USERS} WHERE s.org_id = $1 AND s.identity_id = $2`, [orgId, identityId]),
    userByName: (orgId, userNameKey) => user(USER_BY_NAME, [orgId, userNameKey]),
    usersByExternalId: async (orgId, externalId) =>
      (
        await sql.rows<UserRow>(
          `${USERS} WHERE s.org_id = $1 AND s.external_id = $2 ORDER BY s.created_at, s.identity_id`,
          [orgId, externalId],
        )
      ).map(userFromRow),
    users: async (orgId) =>
      (await sql.rows<UserRow>(`${USERS} WHERE s.org_id = $1 ORDER BY s.created_at, s.identity_id`, [orgId])).map(
        userFromRow,
      ),
    usersPage: async (orgId, offset, limit) =>
      (
        await sql.rows<UserRow>(
          `${USERS} WHERE s.org_id = $1 ORDER BY s.created_at, s.identity_id LIMIT $2 OFFSET $3`,
          [orgId, limit, offset],
        )
      ).map(userFromRow),
    countUsers: async (orgId) =>
      Number(
        (await sql.row<{ n: number | string }>('SELECT COUNT(*) AS n FROM scim_users WHERE org_id = $1', [orgId]))!.n,
      ),
    updateUser: (record) =>
      unlessTaken((tx) =>
        tx.count(
          `UPDATE scim_users SET user_name = $2, user_name_key = $3, external_id = $4, attributes = $5, updated_at = $6
           WHERE identity_id = $1`,
          [
            record.identityId,
            record.userName,
            record.userNameKey,
            record.externalId,
            JSON.stringify(record.attributes),
            record.updatedAt,
          ],
        ),
      ),
    setGroupExternalId: async (orgId, teamId, externalId) => {
      if (externalId === null) await sql.count('DELETE FROM scim_groups WHERE team_id = $1', [teamId]);
      else
        await sql.count(
          `INSERT INTO scim_groups (team_id, org_id, external_id) VALUES ($1, $2, $3)
           ON CONFLICT (team_id) DO UPDATE SET external_id = excluded.external_id`,
          [teamId, orgId, externalId],
        );
    },
    groupExternalId: async (teamId) =>
      (await sql.rows<{ external_id: string }>('SELECT external_id FROM scim_groups WHERE team_id = $1', [teamId]))[0]
        ?.external_id ?? null,
    groupExternalIds: async (orgId) =>
      new Map(
        (
          await sql.rows<{ team_id: string; external_id: string }>(
            'SELECT team_id, external_id FROM scim_groups WHERE org_id = $1',
            [orgId],
          )
        ).map((r) => [r.team_id, r.external_id]),
      ),
    groupsByExternalId: async (orgId, externalId) =>
      (await sql.rows<{ team_id: string }>(GROUPS_BY_EXTERNAL_ID, [orgId, externalId])).map((r) => r.team_id),
  };
}
