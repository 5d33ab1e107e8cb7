import type { KeyState, KeyStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { keyFromRow as fromRow, keyToRow, type KeyRow } from '../rows.js';

export function sqliteKeyStore(runner: Runner): KeyStore {
  return {
    // Transactions begin IMMEDIATE: the write lock is held already.
    lockRing: async () => {},
    list: () =>
      runner.run((db) =>
        (cached(db, 'SELECT * FROM signing_keys ORDER BY created_at, kid').all() as KeyRow[]).map(fromRow),
      ),
    insert: (key) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO signing_keys (kid, alg, state, public_jwk, sealed_private_jwk, created_at, activated_at, retired_at)
           VALUES (@kid, @alg, @state, @public_jwk, @sealed_private_jwk, @created_at, @activated_at, @retired_at)`,
        ).run(keyToRow(key));
      }),
    setState: (kid: string, state: KeyState, at: number) =>
      runner.run((db) => {
        cached(
          db,
          `UPDATE signing_keys SET state = @state,
             activated_at = CASE WHEN @state = 'current' THEN @at ELSE activated_at END,
             retired_at = CASE WHEN @state = 'retired' THEN @at ELSE retired_at END
           WHERE kid = @kid`,
        ).run({ kid, state, at });
      }),
    remove: (kid) =>
      runner.run((db) => {
        cached(db, 'DELETE FROM signing_keys WHERE kid = ?').run(kid);
      }),
  };
}
