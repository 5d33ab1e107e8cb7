import type { AccountState, Identity, IdentityStore } from '../interface.js';
import { changedOne, columnOf, firstRow, insertOf, Rollback, type Sql } from '../sql.js';

export interface IdentityRow {
  identity_id: string;
  username: string;
  display_name: string;
  preferences: string;
  founder: number;
  managed_by: string | null;
  created_at: number;
  updated_at: number;
  /** Added by a later migration: absent from rows this store inserts (null until set). */
  passkey_upgrade_declined_at?: number | null;
}

const identityToRow = (identity: Identity): IdentityRow => ({
  identity_id: identity.identityId,
  username: identity.username,
  display_name: identity.displayName,
  preferences: JSON.stringify(identity.preferences),
  founder: identity.founder ? 1 : 0,
  managed_by: identity.managedBy ?? null,
  created_at: identity.createdAt,
  updated_at: identity.updatedAt,
});

export const identityFromRow = (row: IdentityRow): Identity => ({
  identityId: row.identity_id,
  username: row.username,
  displayName: row.display_name,
  preferences: JSON.parse(row.preferences) as Record<string, string>,
  founder: row.founder === 1,
  ...(row.managed_by ? { managedBy: row.managed_by } : {}),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  passkeyUpgradeDeclinedAt: row.passkey_upgrade_declined_at ?? null,
});

/** The state the account is in: the operator's `disabled` first, then the org's suspension (docs/scim.md#suspension). */
const STATE = "CASE WHEN state = 'active' AND suspended_at IS NOT NULL THEN 'suspended' ELSE state END";

const TAKEN = 'SELECT 1 FROM identity_names WHERE name = $1';

const CLAIM =
  'INSERT INTO identity_names (name, identity_id, current, created_at) VALUES ($1, $2, 1, $3) ON CONFLICT (name) DO NOTHING';

export function identityStore(sql: Sql): IdentityStore {
  const one = (text: string, values: unknown[]) => firstRow(sql, text, values, identityFromRow);
  return {
    // The unique claim of the name decides between two replicas creating it; the identity goes
    // first, as SQLite checks the claim's reference at once (PostgreSQL defers it).
    create: async (identity) => {
      try {
        return await sql.atomic(async (tx) => {
          if ((await tx.rows(TAKEN, [identity.username])).length > 0) return false;
          await tx.count(...insertOf('identities', identityToRow(identity)));
          if ((await tx.count(CLAIM, [identity.username, identity.identityId, identity.createdAt])) !== 1)
            throw new Rollback(false);
          return true;
        });
      } catch (error) {
        // Another replica's identity took the name as its username between the look and the insert.
        if (sql.dialect.isUniqueViolation(error) && (await sql.rows(TAKEN, [identity.username])).length > 0)
          return false;
        throw error;
      }
    },
    declinePasskeyUpgrade: async (identityId, at) => {
      await sql.count('UPDATE identities SET passkey_upgrade_declined_at = $2 WHERE identity_id = $1', [
        identityId,
        at,
      ]);
    },
    get: (identityId) => one('SELECT * FROM identities WHERE identity_id = $1', [identityId]),
    findByUsername: (folded) =>
      one('SELECT i.* FROM identity_names n JOIN identities i ON i.identity_id = n.identity_id WHERE n.name = $1', [
        folded,
      ]),
    aliases: (identityId) =>
      columnOf<string>(
        sql,
        'SELECT name FROM identity_names WHERE identity_id = $1 AND current = 0 ORDER BY created_at, name',
        [identityId],
        'name',
      ),
    rename: (identityId, folded, at) =>
      sql.atomic(async (tx) => {
        const [holder] = await tx.rows<{ identity_id: string }>(
          'SELECT identity_id FROM identity_names WHERE name = $1',
          [folded],
        );
        if (holder && holder.identity_id !== identityId) return false;
        await tx.count('UPDATE identity_names SET current = 0 WHERE identity_id = $1', [identityId]);
        // Taking back one's own alias makes it current again (keeping its first-claimed time).
        if (holder) await tx.count('UPDATE identity_names SET current = 1 WHERE name = $1', [folded]);
        else if ((await tx.count(CLAIM, [folded, identityId, at])) !== 1) throw new Rollback(false);
        await tx.count('UPDATE identities SET username = $2, updated_at = $3 WHERE identity_id = $1', [
          identityId,
          folded,
          at,
        ]);
        return true;
      }),
    setDisplayName: async (identityId, displayName, at) => {
      await sql.count('UPDATE identities SET display_name = $2, updated_at = $3 WHERE identity_id = $1', [
        identityId,
        displayName,
        at,
      ]);
    },
    setPreferences: async (identityId, preferences, at) => {
      await sql.count('UPDATE identities SET preferences = $2, updated_at = $3 WHERE identity_id = $1', [
        identityId,
        JSON.stringify(preferences),
        at,
      ]);
    },
    count: async () => (await sql.rows<{ n: number }>('SELECT count(*) AS n FROM identities'))[0]!.n,
    founderExists: async () => (await sql.rows('SELECT 1 FROM identities WHERE founder = 1')).length > 0,
    listManaged: async (orgId) =>
      (
        await sql.rows<IdentityRow>('SELECT * FROM identities WHERE managed_by = $1 ORDER BY created_at, identity_id', [
          orgId,
        ])
      ).map(identityFromRow),
    managedAmong: async (orgId, identityIds) =>
      identityIds.length === 0
        ? []
        : (
            await sql.rows<{ identity_id: string }>(
              `SELECT identity_id FROM identities WHERE ${sql.dialect.inList('identity_id', '$2')} AND managed_by = $1`,
              [orgId, sql.dialect.list([...identityIds])],
            )
          ).map((row) => row.identity_id),
    state: async (identityId) =>
      (
        await sql.rows<{ state: AccountState }>(`SELECT ${STATE} AS state FROM identities WHERE identity_id = $1`, [
          identityId,
        ])
      )[0]?.state ?? null,
    summaries: async (identityIds) =>
      (
        await sql.rows<{ identity_id: string; username: string; state: AccountState }>(
          `SELECT identity_id, username, ${STATE} AS state FROM identities WHERE ${sql.dialect.inList('identity_id', '$1')}`,
          [sql.dialect.list([...identityIds])],
        )
      ).map((row) => ({ identityId: row.identity_id, username: row.username, state: row.state })),
    setState: (identityId, state, at) =>
      changedOne(sql, 'UPDATE identities SET state = $2, updated_at = $3 WHERE identity_id = $1 AND state <> $2', [
        identityId,
        state,
        at,
      ]),
    setSuspended: (identityId, at) =>
      changedOne(
        sql,
        at === null
          ? 'UPDATE identities SET suspended_at = NULL WHERE identity_id = $1 AND suspended_at IS NOT NULL'
          : 'UPDATE identities SET suspended_at = $2 WHERE identity_id = $1 AND suspended_at IS NULL',
        at === null ? [identityId] : [identityId, at],
      ),
    listPage: async ({ after, prefix, limit }) =>
      (
        await sql.rows<{ identity_id: string; username: string; state: AccountState; created_at: number | string }>(
          // A range on the unique username index: `~` sorts after every character a username may hold.
          // One lower bound only: given `> after AND >= prefix`, SQLite seeks by the first and walks
          // every username before the prefix (100,000 rows for a search near the end; bench:console).
          `SELECT identity_id, username, ${STATE} AS state, created_at FROM identities
           WHERE username ${after !== null && after >= prefix ? '>' : '>='} $1 AND username < $2 ORDER BY username LIMIT $3`,
          [after !== null && after >= prefix ? after : prefix, `${prefix}~`, limit],
        )
      ).map((row) => ({
        identityId: row.identity_id,
        username: row.username,
        state: row.state,
        createdAt: Number(row.created_at),
      })),
    // Names, aliases, passkeys, sessions, devices, TOTP, recovery codes, emails and links go by ON DELETE CASCADE.
    remove: (identityId) => changedOne(sql, 'DELETE FROM identities WHERE identity_id = $1', [identityId]),
  };
}
