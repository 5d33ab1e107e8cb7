import type { AccountState, IdentityStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { identityFromRow as fromRow, type IdentityRow } from '../rows.js';

export function sqliteIdentityStore(runner: Runner): IdentityStore {
  return {
    create: (identity) =>
      runner.run((db) =>
        db.transaction(() => {
          const taken = cached(db, 'SELECT 1 FROM identity_names WHERE name = ?').get(identity.username);
          if (taken) return false;
          cached(
            db,
            `INSERT INTO identities (identity_id, username, display_name, preferences, founder, created_at, updated_at)
             VALUES (@identity_id, @username, @display_name, @preferences, @founder, @created_at, @updated_at)`,
          ).run({
            identity_id: identity.identityId,
            username: identity.username,
            display_name: identity.displayName,
            preferences: JSON.stringify(identity.preferences),
            founder: identity.founder ? 1 : 0,
            created_at: identity.createdAt,
            updated_at: identity.updatedAt,
          });
          cached(db, 'INSERT INTO identity_names (name, identity_id, current, created_at) VALUES (?, ?, 1, ?)').run(
            identity.username,
            identity.identityId,
            identity.createdAt,
          );
          return true;
        })(),
      ),
    get: (identityId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM identities WHERE identity_id = ?').get(identityId) as
          IdentityRow | undefined;
        return row ? fromRow(row) : null;
      }),
    findByUsername: (folded) =>
      runner.run((db) => {
        const row = cached(
          db,
          'SELECT i.* FROM identity_names n JOIN identities i ON i.identity_id = n.identity_id WHERE n.name = ?',
        ).get(folded) as IdentityRow | undefined;
        return row ? fromRow(row) : null;
      }),
    aliases: (identityId) =>
      runner.run((db) =>
        (
          cached(
            db,
            'SELECT name FROM identity_names WHERE identity_id = ? AND current = 0 ORDER BY created_at, name',
          ).all(identityId) as Array<{ name: string }>
        ).map((row) => row.name),
      ),
    rename: (identityId, folded, at) =>
      runner.run((db) =>
        db.transaction(() => {
          const holder = cached(db, 'SELECT identity_id FROM identity_names WHERE name = ?').get(folded) as
            { identity_id: string } | undefined;
          if (holder && holder.identity_id !== identityId) return false;
          cached(db, 'UPDATE identity_names SET current = 0 WHERE identity_id = ?').run(identityId);
          // Taking back one's own alias makes it current again (keeping its first-claimed time).
          if (holder) cached(db, 'UPDATE identity_names SET current = 1 WHERE name = ?').run(folded);
          else
            cached(db, 'INSERT INTO identity_names (name, identity_id, current, created_at) VALUES (?, ?, 1, ?)').run(
              folded,
              identityId,
              at,
            );
          cached(db, 'UPDATE identities SET username = ?, updated_at = ? WHERE identity_id = ?').run(
            folded,
            at,
            identityId,
          );
          return true;
        })(),
      ),
    setDisplayName: (identityId, displayName, at) =>
      runner.run((db) => {
        cached(db, 'UPDATE identities SET display_name = ?, updated_at = ? WHERE identity_id = ?').run(
          displayName,
          at,
          identityId,
        );
      }),
    setPreferences: (identityId, preferences, at) =>
      runner.run((db) => {
        cached(db, 'UPDATE identities SET preferences = ?, updated_at = ? WHERE identity_id = ?').run(
          JSON.stringify(preferences),
          at,
          identityId,
        );
      }),
    count: () => runner.run((db) => (cached(db, 'SELECT COUNT(*) AS n FROM identities').get() as { n: number }).n),
    founderExists: () =>
      runner.run((db) => cached(db, 'SELECT 1 FROM identities WHERE founder = 1').get() !== undefined),
    state: (identityId) =>
      runner.run(
        (db) =>
          (
            cached(db, 'SELECT state FROM identities WHERE identity_id = ?').get(identityId) as
              { state: AccountState } | undefined
          )?.state ?? null,
      ),
    summaries: (identityIds) =>
      runner.run((db) =>
        (
          cached(
            db,
            'SELECT identity_id, username, state FROM identities WHERE identity_id IN (SELECT value FROM json_each(?))',
          ).all(JSON.stringify(identityIds)) as Array<{ identity_id: string; username: string; state: AccountState }>
        ).map((row) => ({ identityId: row.identity_id, username: row.username, state: row.state })),
      ),
    setState: (identityId, state, at) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE identities SET state = ?, updated_at = ? WHERE identity_id = ? AND state <> ?').run(
            state,
            at,
            identityId,
            state,
          ).changes === 1,
      ),
    remove: (identityId) =>
      runner.run((db) => cached(db, 'DELETE FROM identities WHERE identity_id = ?').run(identityId).changes === 1),
  };
}
