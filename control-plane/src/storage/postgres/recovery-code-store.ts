import { recoveryFromRow, type RecoveryRow } from '../rows.js';
import type { RecoveryCodeStore } from '../types.js';
import type { Sql } from './sql.js';

export function postgresRecoveryCodeStore(sql: Sql): RecoveryCodeStore {
  return {
    replace: (identityId, codes, at) =>
      sql.atomic(async (tx) => {
        await tx.count('DELETE FROM recovery_codes WHERE identity_id = $1', [identityId]);
        await tx.count(
          `INSERT INTO recovery_codes (code_id, identity_id, code_hash, created_at, used_at)
           SELECT id, $1, hash, $2, NULL FROM unnest($3::text[], $4::text[]) AS c(id, hash)`,
          [identityId, at, codes.map((c) => c.codeId), codes.map((c) => c.codeHash)],
        );
      }),
    listUnused: async (identityId) =>
      (
        await sql.rows<RecoveryRow>(
          'SELECT * FROM recovery_codes WHERE identity_id = $1 AND used_at IS NULL ORDER BY code_id',
          [identityId],
        )
      ).map(recoveryFromRow),
    consume: async (identityId, codeId, at) =>
      (await sql.count(
        'UPDATE recovery_codes SET used_at = $3 WHERE identity_id = $1 AND code_id = $2 AND used_at IS NULL',
        [identityId, codeId, at],
      )) === 1,
  };
}
