import { CREDENTIAL_SUMMARY_COLUMNS, credentialSummaryFromRow, credentialToRow, type CredentialRow } from '../rows.js';
import type { CredentialStore } from '../types.js';
import { insertOf, type Sql } from './sql.js';

export function postgresCredentialStore(sql: Sql): CredentialStore {
  return {
    insert: async (credential) =>
      (await sql.count(...insertOf('passkeys', credentialToRow(credential), 'ON CONFLICT (cred_id) DO NOTHING'))) === 1,
    get: async (credId) => {
      const [row] = await sql.rows<CredentialRow>('SELECT * FROM passkeys WHERE cred_id = $1', [credId]);
      return row ? { ...credentialSummaryFromRow(row), publicKey: new Uint8Array(row.public_key) } : null;
    },
    listByIdentity: async (identityId) =>
      (
        await sql.rows<CredentialRow>(
          `SELECT ${CREDENTIAL_SUMMARY_COLUMNS} FROM passkeys WHERE identity_id = $1 ORDER BY created_at, cred_id`,
          [identityId],
        )
      ).map(credentialSummaryFromRow),
    countByIdentity: async (identityId) =>
      (await sql.rows<{ n: number }>('SELECT count(*) AS n FROM passkeys WHERE identity_id = $1', [identityId]))[0]!.n,
    rename: async (identityId, credId, label) =>
      (await sql.count('UPDATE passkeys SET label = $3 WHERE identity_id = $1 AND cred_id = $2', [
        identityId,
        credId,
        label,
      ])) === 1,
    remove: async (identityId, credId) =>
      (await sql.count('DELETE FROM passkeys WHERE identity_id = $1 AND cred_id = $2', [identityId, credId])) === 1,
    recordUse: async (credId, use) => {
      await sql.count('UPDATE passkeys SET counter = $2, backed_up = $3, last_used_at = $4 WHERE cred_id = $1', [
        credId,
        use.counter,
        use.backedUp ? 1 : 0,
        use.at,
      ]);
    },
  };
}
