import type { LinkStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { linkFromRow as fromRow, type LinkRow } from '../rows.js';

export function sqliteLinkStore(runner: Runner): LinkStore {
  return {
    insert: (record) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO one_time_links (token_hash, purpose, identity_id, email_id, device_id, created_at, expires_at, used_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`,
        ).run(
          record.tokenHash,
          record.purpose,
          record.identityId,
          record.emailId,
          record.deviceId,
          record.createdAt,
          record.expiresAt,
        );
      }),
    find: (tokenHash) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM one_time_links WHERE token_hash = ?').get(tokenHash) as
          LinkRow | undefined;
        return row ? fromRow(row) : null;
      }),
    consume: (tokenHash, at) =>
      runner.run(
        (db) =>
          cached(
            db,
            'UPDATE one_time_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?',
          ).run(at, tokenHash, at).changes === 1,
      ),
    purgeExpired: (before) =>
      runner.run((db) => cached(db, 'DELETE FROM one_time_links WHERE expires_at < ?').run(before).changes),
  };
}
