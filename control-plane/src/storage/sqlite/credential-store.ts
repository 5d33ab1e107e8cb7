import type { CredentialStore, CredentialSummary, StoredCredential } from '../types.js';
import type { Runner } from './serial-runner.js';

interface CredentialRow {
  cred_id: string;
  identity_id: string;
  public_key: Buffer;
  counter: number;
  transports: string;
  backup_eligible: number;
  backed_up: number;
  label: string;
  created_at: number;
  last_used_at: number | null;
}

function summaryOf(row: Omit<CredentialRow, 'public_key'>): CredentialSummary {
  return {
    credId: row.cred_id,
    identityId: row.identity_id,
    counter: row.counter,
    transports: JSON.parse(row.transports) as string[],
    backupEligible: row.backup_eligible === 1,
    backedUp: row.backed_up === 1,
    label: row.label,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  };
}

// Listings never select the public key column.
const SUMMARY_COLUMNS = 'cred_id, identity_id, counter, transports, backup_eligible, backed_up, label, created_at, last_used_at';

export function sqliteCredentialStore(runner: Runner): CredentialStore {
  return {
    insert: (credential: StoredCredential) =>
      runner.run((db) => {
        const result = db.prepare(
          `INSERT INTO passkeys (cred_id, identity_id, public_key, counter, transports, backup_eligible, backed_up, label, created_at, last_used_at)
           VALUES (@cred_id, @identity_id, @public_key, @counter, @transports, @backup_eligible, @backed_up, @label, @created_at, @last_used_at)
           ON CONFLICT (cred_id) DO NOTHING`,
        ).run({
          cred_id: credential.credId,
          identity_id: credential.identityId,
          public_key: Buffer.from(credential.publicKey),
          counter: credential.counter,
          transports: JSON.stringify(credential.transports),
          backup_eligible: credential.backupEligible ? 1 : 0,
          backed_up: credential.backedUp ? 1 : 0,
          label: credential.label,
          created_at: credential.createdAt,
          last_used_at: credential.lastUsedAt,
        });
        return result.changes === 1;
      }),
    get: (credId) =>
      runner.run((db) => {
        const row = db.prepare('SELECT * FROM passkeys WHERE cred_id = ?').get(credId) as CredentialRow | undefined;
        return row ? { ...summaryOf(row), publicKey: new Uint8Array(row.public_key) } : null;
      }),
    listByIdentity: (identityId) =>
      runner.run((db) =>
        (db.prepare(`SELECT ${SUMMARY_COLUMNS} FROM passkeys WHERE identity_id = ? ORDER BY created_at, cred_id`).all(identityId) as CredentialRow[]).map(summaryOf),
      ),
    countByIdentity: (identityId) =>
      runner.run((db) => (db.prepare('SELECT COUNT(*) AS n FROM passkeys WHERE identity_id = ?').get(identityId) as { n: number }).n),
    rename: (identityId, credId, label) =>
      runner.run((db) => db.prepare('UPDATE passkeys SET label = ? WHERE identity_id = ? AND cred_id = ?').run(label, identityId, credId).changes === 1),
    remove: (identityId, credId) =>
      runner.run((db) => db.prepare('DELETE FROM passkeys WHERE identity_id = ? AND cred_id = ?').run(identityId, credId).changes === 1),
    recordUse: (credId, use) =>
      runner.run((db) => {
        db.prepare('UPDATE passkeys SET counter = ?, backed_up = ?, last_used_at = ? WHERE cred_id = ?').run(use.counter, use.backedUp ? 1 : 0, use.at, credId);
      }),
  };
}
