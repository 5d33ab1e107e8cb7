import { linkFromRow, linkToRow, type LinkRow } from '../rows.js';
import type { LinkStore } from '../types.js';
import { insertOf, type Sql } from './sql.js';

export function postgresLinkStore(sql: Sql): LinkStore {
  return {
    insert: async (record) => {
      await sql.count(...insertOf('one_time_links', linkToRow({ ...record, usedAt: null })));
    },
    find: async (tokenHash) => {
      const [row] = await sql.rows<LinkRow>('SELECT * FROM one_time_links WHERE token_hash = $1', [tokenHash]);
      return row ? linkFromRow(row) : null;
    },
    consume: async (tokenHash, at) =>
      (await sql.count(
        'UPDATE one_time_links SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2',
        [tokenHash, at],
      )) === 1,
    purgeExpired: (before) => sql.count('DELETE FROM one_time_links WHERE expires_at < $1', [before]),
  };
}
