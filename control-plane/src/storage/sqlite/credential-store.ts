import type { CredentialStore, StoredCredential } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import {
  CREDENTIAL_SUMMARY_COLUMNS as SUMMARY_COLUMNS,
  credentialSummaryFromRow as summaryOf,
  credentialToRow,
  type CredentialRow,
} from '../rows.js';

export function sqliteCredentialStore(runner: Runner): CredentialStore {
  return {
    insert: (credential: StoredCredential) =>
      runner.run((db) => {
        const result = cached(
          db,
          `INSERT INTO passkeys (cred_id, identity_id, public_key, counter, transports, backup_eligible, backed_up, label, created_at, last_used_at)
           VALUES (@cred_id, @identity_id, @public_key, @counter, @transports, @backup_eligible, @backed_up, @label, @created_at, @last_used_at)
           ON CONFLICT (cred_id) DO NOTHING`,
        ).run(credentialToRow(credential));
        return result.changes === 1;
      }),
    get: (credId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM passkeys WHERE cred_id = ?').get(credId) as CredentialRow | undefined;
        return row ? { ...summaryOf(row), publicKey: new Uint8Array(row.public_key) } : null;
      }),
    listByIdentity: (identityId) =>
      runner.run((db) =>
        (
          cached(db, `SELECT ${SUMMARY_COLUMNS} FROM passkeys WHERE identity_id = ? ORDER BY created_at, cred_id`).all(
            identityId,
          ) as CredentialRow[]
        ).map(summaryOf),
      ),
    countByIdentity: (identityId) =>
      runner.run(
        (db) =>
          (cached(db, 'SELECT COUNT(*) AS n FROM passkeys WHERE identity_id = ?').get(identityId) as { n: number }).n,
      ),
    rename: (identityId, credId, label) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE passkeys SET label = ? WHERE identity_id = ? AND cred_id = ?').run(
            label,
            identityId,
            credId,
          ).changes === 1,
      ),
    remove: (identityId, credId) =>
      runner.run(
        (db) =>
          cached(db, 'DELETE FROM passkeys WHERE identity_id = ? AND cred_id = ?').run(identityId, credId).changes ===
          1,
      ),
    recordUse: (credId, use) =>
      runner.run((db) => {
        cached(db, 'UPDATE passkeys SET counter = ?, backed_up = ?, last_used_at = ? WHERE cred_id = ?').run(
          use.counter,
          use.backedUp ? 1 : 0,
          use.at,
          credId,
        );
      }),
  };
}
