import type { StoredTotp, TotpState, TotpStore } from '../interface.js';
import { changedOne, firstRow, type Sql } from '../sql.js';

interface TotpRow {
  identity_id: string;
  state: string;
  sealed_secret: Buffer;
  last_used_step: number | null;
  created_at: number;
  activated_at: number | null;
}

const totpFromRow = (row: TotpRow): StoredTotp => ({
  identityId: row.identity_id,
  state: row.state as TotpState,
  sealedSecret: row.sealed_secret,
  lastUsedStep: row.last_used_step,
  createdAt: row.created_at,
  activatedAt: row.activated_at,
});

export function totpStore(sql: Sql): TotpStore {
  return {
    get: (identityId) => firstRow(sql, 'SELECT * FROM totp_secrets WHERE identity_id = $1', [identityId], totpFromRow),
    // The upsert leaves an active row untouched: a new setup never silently replaces a working secret.
    putPending: (record) =>
      changedOne(
        sql,
        `INSERT INTO totp_secrets (identity_id, state, sealed_secret, last_used_step, created_at, activated_at)
         VALUES ($1, 'pending', $2, NULL, $3, NULL)
         ON CONFLICT (identity_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, created_at = excluded.created_at,
           last_used_step = NULL, activated_at = NULL
         WHERE totp_secrets.state = 'pending'`,
        [record.identityId, record.sealedSecret, record.createdAt],
      ),
    activate: (identityId, step, at) =>
      changedOne(
        sql,
        `UPDATE totp_secrets SET state = 'active', activated_at = $3, last_used_step = $2 WHERE identity_id = $1 AND state = 'pending'`,
        [identityId, step, at],
      ),
    useStep: (identityId, step) =>
      changedOne(
        sql,
        `UPDATE totp_secrets SET last_used_step = $2
         WHERE identity_id = $1 AND state = 'active' AND (last_used_step IS NULL OR last_used_step < $2)`,
        [identityId, step],
      ),
    remove: (identityId) => changedOne(sql, 'DELETE FROM totp_secrets WHERE identity_id = $1', [identityId]),
  };
}
