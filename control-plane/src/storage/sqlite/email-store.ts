import type { EmailStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { emailFromRow as fromRow, type EmailRow } from '../rows.js';

export function sqliteEmailStore(runner: Runner): EmailStore {
  return {
    add: (record) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO emails (email_id, identity_id, email, created_at, verified_at) VALUES (?, ?, ?, ?, NULL)
           ON CONFLICT (identity_id, email) DO NOTHING`,
        ).run(record.emailId, record.identityId, record.email, record.createdAt);
        return fromRow(
          cached(db, 'SELECT * FROM emails WHERE identity_id = ? AND email = ?').get(
            record.identityId,
            record.email,
          ) as EmailRow,
        );
      }),
    get: (emailId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM emails WHERE email_id = ?').get(emailId) as EmailRow | undefined;
        return row ? fromRow(row) : null;
      }),
    listByIdentity: (identityId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM emails WHERE identity_id = ? ORDER BY created_at, email').all(
            identityId,
          ) as EmailRow[]
        ).map(fromRow),
      ),
    findVerified: (email) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM emails WHERE email = ? AND verified_at IS NOT NULL').get(email) as
          EmailRow | undefined;
        return row ? fromRow(row) : null;
      }),
    markVerified: (emailId, at) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM emails WHERE email_id = ?').get(emailId) as EmailRow | undefined;
        if (!row) return 'taken' as const;
        if (row.verified_at !== null) return 'already' as const;
        // The partial unique index lets one account only hold an address as verified.
        const holder = cached(db, 'SELECT 1 FROM emails WHERE email = ? AND verified_at IS NOT NULL').get(row.email);
        if (holder) return 'taken' as const;
        cached(db, 'UPDATE emails SET verified_at = ? WHERE email_id = ? AND verified_at IS NULL').run(at, emailId);
        return 'verified' as const;
      }),
  };
}
