import { changedOne, firstRow, insertOf, type Sql } from '../sql.js';
import type { ContactStore, StoredContact } from '../interface.js';

interface ContactRow {
  contact_id: string;
  email: string;
  topic: string;
  message: string;
  created_at: number;
  mailed_at: number | null;
}

const contactToRow = (c: StoredContact): ContactRow => ({
  contact_id: c.contactId,
  email: c.email,
  topic: c.topic,
  message: c.message,
  created_at: c.createdAt,
  mailed_at: c.mailedAt,
});

const contactFromRow = (row: ContactRow): StoredContact => ({
  contactId: row.contact_id,
  email: row.email,
  topic: row.topic,
  message: row.message,
  createdAt: row.created_at,
  mailedAt: row.mailed_at,
});

export function contactStore(sql: Sql): ContactStore {
  return {
    insert: async (record) => {
      await sql.count(...insertOf('contacts', contactToRow(record)));
    },
    get: (contactId) => firstRow(sql, 'SELECT * FROM contacts WHERE contact_id = $1', [contactId], contactFromRow),
    markMailed: (contactId, at) =>
      changedOne(sql, 'UPDATE contacts SET mailed_at = $2 WHERE contact_id = $1 AND mailed_at IS NULL', [
        contactId,
        at,
      ]),
    purgeBefore: (before) => sql.count('DELETE FROM contacts WHERE created_at < $1', [before]),
  };
}
