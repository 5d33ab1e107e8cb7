import type { RecoveryCodeStore, StoredRecoveryCode } from '../interface.js';
import { changedOne, type Sql } from '../sql.js';

interface RecoveryRow {
  code_id: string;
  identity_id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

const recoveryFromRow = (row: RecoveryRow): StoredRecoveryCode => ({
  codeId: row.code_id,
  identityId: row.identity_id,
  codeHash: row.code_hash,
  createdAt: row.created_at,
  usedAt: row.used_at,
});

export function recoveryCodeStore(sql: Sql): RecoveryCodeStore {
  return {
    replace: (identityId, codes, at) =>
      sql.atomic(async (tx) => {
        await tx.count('DELETE FROM recovery_codes WHERE identity_id = $1', [identityId]);
        if (codes.length === 0) return;
        // One multi-row VALUES: its text depends only on how many codes there are.
        const rows = codes.map((_, i) => `($1, $2, $${2 * i + 3}, $${2 * i + 4}, NULL)`);
        await tx.count(
          `INSERT INTO recovery_codes (identity_id, created_at, code_id, code_hash, used_at) VALUES ${rows.join(', ')}`,
          [identityId, at, ...codes.flatMap((c) => [c.codeId, c.codeHash])],
        );
      }),
    listUnused: async (identityId) =>
      (
        await sql.rows<RecoveryRow>(
          'SELECT * FROM recovery_codes WHERE identity_id = $1 AND used_at IS NULL ORDER BY code_id',
          [identityId],
        )
      ).map(recoveryFromRow),
    consume: (identityId, codeId, at) =>
      changedOne(
        sql,
        'UPDATE recovery_codes SET used_at = $3 WHERE identity_id = $1 AND code_id = $2 AND used_at IS NULL',
        [identityId, codeId, at],
      ),
  };
}
