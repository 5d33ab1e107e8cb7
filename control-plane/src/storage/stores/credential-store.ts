import type { CredentialStore, CredentialSummary } from '../interface.js';
import { changedOne, insertOf, type Sql } from '../sql.js';

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
  aaguid: string | null;
  attested: number;
}

/** Listings never select the public key column. */
const CREDENTIAL_SUMMARY_COLUMNS =
  'cred_id, identity_id, counter, transports, backup_eligible, backed_up, label, created_at, last_used_at, aaguid, attested';

const credentialToRow = (c: CredentialSummary & { publicKey: Uint8Array }): CredentialRow => ({
  cred_id: c.credId,
  identity_id: c.identityId,
  public_key: Buffer.from(c.publicKey),
  counter: c.counter,
  transports: JSON.stringify(c.transports),
  backup_eligible: c.backupEligible ? 1 : 0,
  backed_up: c.backedUp ? 1 : 0,
  label: c.label,
  created_at: c.createdAt,
  last_used_at: c.lastUsedAt,
  aaguid: c.aaguid ?? null,
  attested: c.attested ? 1 : 0,
});

const credentialSummaryFromRow = (row: Omit<CredentialRow, 'public_key'>): CredentialSummary => ({
  credId: row.cred_id,
  identityId: row.identity_id,
  counter: row.counter,
  transports: JSON.parse(row.transports) as string[],
  backupEligible: row.backup_eligible === 1,
  backedUp: row.backed_up === 1,
  label: row.label,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  aaguid: row.aaguid,
  attested: Number(row.attested) === 1,
});

export function credentialStore(sql: Sql): CredentialStore {
  return {
    insert: (credential) =>
      changedOne(sql, ...insertOf('passkeys', credentialToRow(credential), 'ON CONFLICT (cred_id) DO NOTHING')),
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
    rename: (identityId, credId, label) =>
      changedOne(sql, 'UPDATE passkeys SET label = $3 WHERE identity_id = $1 AND cred_id = $2', [
        identityId,
        credId,
        label,
      ]),
    remove: (identityId, credId) =>
      changedOne(sql, 'DELETE FROM passkeys WHERE identity_id = $1 AND cred_id = $2', [identityId, credId]),
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
