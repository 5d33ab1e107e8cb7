import { contactFromRow, contactToRow, type ContactRow } from '../rows.js';
import type { ContactStore } from '../types.js';
import { insertOf, type Sql } from './sql.js';

export function postgresContactStore(sql: Sql): ContactStore {
  return {
    insert: async (record) => {
      await sql.count(...insertOf('contacts', contactToRow(record)));
    },
    get: async (contactId) => {
      const [row] = await sql.rows<ContactRow>('SELECT * FROM contacts WHERE contact_id = $1', [contactId]);
      return row ? contactFromRow(row) : null;
    },
    markMailed: async (contactId, at) =>
      (await sql.count('UPDATE contacts SET mailed_at = $2 WHERE contact_id = $1 AND mailed_at IS NULL', [
        contactId,
        at,
      ])) === 1,
    purgeBefore: (before) => sql.count('DELETE FROM contacts WHERE created_at < $1', [before]),
  };
}
