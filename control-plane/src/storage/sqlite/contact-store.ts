import { contactFromRow, contactToRow, type ContactRow } from '../rows.js';
import type { ContactStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';

export function sqliteContactStore(runner: Runner): ContactStore {
  return {
    insert: (record) =>
      runner.run((db) => {
        const row = contactToRow(record);
        cached(
          db,
          'INSERT INTO contacts (contact_id, email, topic, message, created_at, mailed_at) VALUES (?, ?, ?, ?, ?, ?)',
        ).run(row.contact_id, row.email, row.topic, row.message, row.created_at, row.mailed_at);
      }),
    get: (contactId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM contacts WHERE contact_id = ?').get(contactId) as ContactRow | undefined;
        return row ? contactFromRow(row) : null;
      }),
    markMailed: (contactId, at) =>
      runner.run(
        (db) =>
          cached(db, 'UPDATE contacts SET mailed_at = ? WHERE contact_id = ? AND mailed_at IS NULL').run(at, contactId)
            .changes === 1,
      ),
    purgeBefore: (before) =>
      runner.run((db) => cached(db, 'DELETE FROM contacts WHERE created_at < ?').run(before).changes),
  };
}
