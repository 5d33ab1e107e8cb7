import type { EmailStore, StoredEmail } from '../interface.js';
import { changedOne, firstRow, type Sql } from '../sql.js';

export interface EmailRow {
  email_id: string;
  identity_id: string;
  email: string;
  created_at: number;
  verified_at: number | null;
}

export const emailFromRow = (row: EmailRow): StoredEmail => ({
  emailId: row.email_id,
  identityId: row.identity_id,
  email: row.email,
  createdAt: row.created_at,
  verifiedAt: row.verified_at,
});

export function emailStore(sql: Sql): EmailStore {
  const one = (text: string, values: unknown[]) => firstRow(sql, text, values, emailFromRow);
  return {
    add: async (record) => {
      await sql.count(
        `INSERT INTO emails (email_id, identity_id, email, created_at, verified_at) VALUES ($1, $2, $3, $4, NULL)
         ON CONFLICT (identity_id, email) DO NOTHING`,
        [record.emailId, record.identityId, record.email, record.createdAt],
      );
      return (await one('SELECT * FROM emails WHERE identity_id = $1 AND email = $2', [
        record.identityId,
        record.email,
      ]))!;
    },
    remove: (identityId, emailId) =>
      changedOne(sql, 'DELETE FROM emails WHERE identity_id = $1 AND email_id = $2', [identityId, emailId]),
    get: (emailId) => one('SELECT * FROM emails WHERE email_id = $1', [emailId]),
    listByIdentity: async (identityId) =>
      (
        await sql.rows<EmailRow>('SELECT * FROM emails WHERE identity_id = $1 ORDER BY created_at, email', [identityId])
      ).map(emailFromRow),
    findVerified: (email) => one('SELECT * FROM emails WHERE email = $1 AND verified_at IS NOT NULL', [email]),
    markVerified: async (emailId, at) => {
      const row = await one('SELECT * FROM emails WHERE email_id = $1', [emailId]);
      if (!row) return 'taken';
      if (row.verifiedAt !== null) return 'already';
      try {
        // The partial unique index lets one account only hold an address as verified: of two
        // replicas verifying it for two accounts at once, the second UPDATE is refused.
        const changed = await sql.atomic((tx) =>
          tx.count(
            `UPDATE emails SET verified_at = $2 WHERE email_id = $1 AND verified_at IS NULL
             AND NOT EXISTS (SELECT 1 FROM emails WHERE email = $3 AND verified_at IS NOT NULL)`,
            [emailId, at, row.email],
          ),
        );
        if (changed === 1) return 'verified';
      } catch (error) {
        if (!sql.dialect.isUniqueViolation(error)) throw error;
      }
      const now = await one('SELECT * FROM emails WHERE email_id = $1', [emailId]);
      return now?.verifiedAt != null ? 'already' : 'taken';
    },
  };
}
