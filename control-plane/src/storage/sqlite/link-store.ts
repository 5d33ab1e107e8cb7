import type { LinkStore, StoredLink } from '../types.js';
import type { Runner } from './serial-runner.js';

interface LinkRow {
  token_hash: string;
  purpose: string;
  identity_id: string;
  email_id: string;
  device_id: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

function fromRow(row: LinkRow): StoredLink {
  return {
    tokenHash: row.token_hash,
    purpose: row.purpose as StoredLink['purpose'],
    identityId: row.identity_id,
    emailId: row.email_id,
    deviceId: row.device_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    usedAt: row.used_at,
  };
}

export function sqliteLinkStore(runner: Runner): LinkStore {
  return {
    insert: (record) =>
      runner.run((db) => {
        db.prepare(
          `INSERT INTO one_time_links (token_hash, purpose, identity_id, email_id, device_id, created_at, expires_at, used_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`,
        ).run(record.tokenHash, record.purpose, record.identityId, record.emailId, record.deviceId, record.createdAt, record.expiresAt);
      }),
    find: (tokenHash) =>
      runner.run((db) => {
        const row = db.prepare('SELECT * FROM one_time_links WHERE token_hash = ?').get(tokenHash) as LinkRow | undefined;
        return row ? fromRow(row) : null;
      }),
    consume: (tokenHash, at) =>
      runner.run((db) =>
        db.prepare('UPDATE one_time_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?')
          .run(at, tokenHash, at).changes === 1,
      ),
    purgeExpired: (before) =>
      runner.run((db) => db.prepare('DELETE FROM one_time_links WHERE expires_at < ?').run(before).changes),
  };
}
