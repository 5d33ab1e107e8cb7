import type { RecoveryCodeStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { recoveryFromRow as fromRow, type RecoveryRow } from '../rows.js';

export function sqliteRecoveryCodeStore(runner: Runner): RecoveryCodeStore {
  return {
    replace: (identityId, codes, at) =>
      runner.run((db) =>
        db.transaction(() => {
          cached(db, 'DELETE FROM recovery_codes WHERE identity_id = ?').run(identityId);
          const insert = cached(
            db,
            'INSERT INTO recovery_codes (code_id, identity_id, code_hash, created_at, used_at) VALUES (?, ?, ?, ?, NULL)',
          );
          for (const code of codes) insert.run(code.codeId, identityId, code.codeHash, at);
        })(),
      ),
    listUnused: (identityId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM recovery_codes WHERE identity_id = ? AND used_at IS NULL ORDER BY code_id').all(
            identityId,
          ) as RecoveryRow[]
        ).map(fromRow),
      ),
    consume: (identityId, codeId, at) =>
      runner.run(
        (db) =>
          cached(
            db,
            'UPDATE recovery_codes SET used_at = ? WHERE identity_id = ? AND code_id = ? AND used_at IS NULL',
          ).run(at, identityId, codeId).changes === 1,
      ),
  };
}
