import type { AccountState, Identity, IdentityStore } from '../types.js';
import type { Runner } from './serial-runner.js';

interface IdentityRow {
  identity_id: string;
  username: string;
  display_name: string;
  preferences: string;
  founder: number;
  created_at: number;
  updated_at: number;
}

function fromRow(row: IdentityRow): Identity {
  return {
    identityId: row.identity_id,
    username: row.username,
    displayName: row.display_name,
    preferences: JSON.parse(row.preferences) as Record<string, string>,
    founder: row.founder === 1,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function sqliteIdentityStore(runner: Runner): IdentityStore {
  return {
    create: (identity) =>
      runner.run((db) =>
        db.transaction(() => {
          const taken = db.prepare('SELECT 1 FROM identity_names WHERE name = ?').get(identity.username);
          if (taken) return false;
          db.prepare(
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
          db.prepare('INSERT INTO identity_names (name, identity_id, current, created_at) VALUES (?, ?, 1, ?)').run(
            identity.username, identity.identityId, identity.createdAt,
          );
          return true;
        })(),
      ),
    get: (identityId) =>
      runner.run((db) => {
        const row = db.prepare('SELECT * FROM identities WHERE identity_id = ?').get(identityId) as IdentityRow | undefined;
        return row ? fromRow(row) : null;
      }),
    findByUsername: (folded) =>
      runner.run((db) => {
        const row = db.prepare(
          'SELECT i.* FROM identity_names n JOIN identities i ON i.identity_id = n.identity_id WHERE n.name = ?',
        ).get(folded) as IdentityRow | undefined;
        return row ? fromRow(row) : null;
      }),
    aliases: (identityId) =>
      runner.run((db) =>
        (db.prepare('SELECT name FROM identity_names WHERE identity_id = ? AND current = 0 ORDER BY created_at, name').all(identityId) as Array<{ name: string }>)
          .map((row) => row.name),
      ),
    rename: (identityId, folded, at) =>
      runner.run((db) =>
        db.transaction(() => {
          const holder = db.prepare('SELECT identity_id FROM identity_names WHERE name = ?').get(folded) as { identity_id: string } | undefined;
          if (holder && holder.identity_id !== identityId) return false;
          db.prepare('UPDATE identity_names SET current = 0 WHERE identity_id = ?').run(identityId);
          // Taking back one's own alias makes it current again (keeping its first-claimed time).
          if (holder) db.prepare('UPDATE identity_names SET current = 1 WHERE name = ?').run(folded);
          else db.prepare('INSERT INTO identity_names (name, identity_id, current, created_at) VALUES (?, ?, 1, ?)').run(folded, identityId, at);
          db.prepare('UPDATE identities SET username = ?, updated_at = ? WHERE identity_id = ?').run(folded, at, identityId);
          return true;
        })(),
      ),
    setDisplayName: (identityId, displayName, at) =>
      runner.run((db) => {
        db.prepare('UPDATE identities SET display_name = ?, updated_at = ? WHERE identity_id = ?').run(displayName, at, identityId);
      }),
    setPreferences: (identityId, preferences, at) =>
      runner.run((db) => {
        db.prepare('UPDATE identities SET preferences = ?, updated_at = ? WHERE identity_id = ?').run(JSON.stringify(preferences), at, identityId);
      }),
    count: () => runner.run((db) => (db.prepare('SELECT COUNT(*) AS n FROM identities').get() as { n: number }).n),
    founderExists: () => runner.run((db) => db.prepare('SELECT 1 FROM identities WHERE founder = 1').get() !== undefined),
    state: (identityId) =>
      runner.run((db) => (db.prepare('SELECT state FROM identities WHERE identity_id = ?').get(identityId) as { state: AccountState } | undefined)?.state ?? null),
    setState: (identityId, state, at) =>
      runner.run((db) => db.prepare('UPDATE identities SET state = ?, updated_at = ? WHERE identity_id = ? AND state <> ?').run(state, at, identityId, state).changes === 1),
    remove: (identityId) => runner.run((db) => db.prepare('DELETE FROM identities WHERE identity_id = ?').run(identityId).changes === 1),
  };
}
