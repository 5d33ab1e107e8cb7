import type { RecoveryCodeStore, StoredRecoveryCode } from '../types.js';
import type { Runner } from './serial-runner.js';

interface RecoveryRow {
  code_id: string;
  identity_id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

function fromRow(row: RecoveryRow): StoredRecoveryCode {
  return { codeId: row.code_id, identityId: row.identity_id, codeHash: row.code_hash, createdAt: row.created_at, usedAt: row.used_at };
}

export function sqliteRecoveryCodeStore(runner: Runner): RecoveryCodeStore {
  return {
    replace: (identityId, codes, at) =>
      runner.run((db) =>
        db.transaction(() => {
          db.prepare('DELETE FROM recovery_codes WHERE identity_id = ?').run(identityId);
          const insert = db.prepare('INSERT INTO recovery_codes (code_id, identity_id, code_hash, created_at, used_at) VALUES (?, ?, ?, ?, NULL)');
          for (const code of codes) insert.run(code.codeId, identityId, code.codeHash, at);
        })(),
      ),
    listUnused: (identityId) =>
      runner.run((db) =>
        (db.prepare('SELECT * FROM recovery_codes WHERE identity_id = ? AND used_at IS NULL ORDER BY code_id').all(identityId) as RecoveryRow[]).map(fromRow),
      ),
    consume: (identityId, codeId, at) =>
      runner.run((db) =>
        db.prepare('UPDATE recovery_codes SET used_at = ? WHERE identity_id = ? AND code_id = ? AND used_at IS NULL')
          .run(at, identityId, codeId).changes === 1,
      ),
  };
}
