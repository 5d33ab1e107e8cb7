import type { TotpStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { totpFromRow as fromRow, type TotpRow } from '../rows.js';

export function sqliteTotpStore(runner: Runner): TotpStore {
  return {
    get: (identityId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM totp_secrets WHERE identity_id = ?').get(identityId) as
          TotpRow | undefined;
        return row ? fromRow(row) : null;
      }),
    putPending: (record) =>
      runner.run((db) => {
        // The upsert leaves an active row untouched: a new setup never silently replaces a working secret.
        const result = cached(
          db,
          `INSERT INTO totp_secrets (identity_id, state, sealed_secret, last_used_step, created_at, activated_at)
           VALUES (@identity_id, 'pending', @sealed_secret, NULL, @created_at, NULL)
           ON CONFLICT (identity_id) DO UPDATE SET sealed_secret = excluded.sealed_secret, created_at = excluded.created_at,
             last_used_step = NULL, activated_at = NULL
           WHERE totp_secrets.state = 'pending'`,
        ).run({ identity_id: record.identityId, sealed_secret: record.sealedSecret, created_at: record.createdAt });
        return result.changes === 1;
      }),
    activate: (identityId, step, at) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE totp_secrets SET state = 'active', activated_at = ?, last_used_step = ?
           WHERE identity_id = ? AND state = 'pending'`,
          ).run(at, step, identityId).changes === 1,
      ),
    useStep: (identityId, step) =>
      runner.run(
        (db) =>
          cached(
            db,
            `UPDATE totp_secrets SET last_used_step = ?
           WHERE identity_id = ? AND state = 'active' AND (last_used_step IS NULL OR last_used_step < ?)`,
          ).run(step, identityId, step).changes === 1,
      ),
    remove: (identityId) =>
      runner.run((db) => cached(db, 'DELETE FROM totp_secrets WHERE identity_id = ?').run(identityId).changes === 1),
  };
}
