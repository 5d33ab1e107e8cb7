import { keyFromRow, keyToRow, type KeyRow } from '../rows.js';
import type { KeyStore } from '../types.js';
import { SIGNING_RING_LOCK } from './database.js';
import { insertOf, type Sql } from './sql.js';

export function postgresKeyStore(sql: Sql): KeyStore {
  return {
    lockRing: async () => {
      await sql.rows('SELECT pg_advisory_xact_lock($1)', [SIGNING_RING_LOCK]);
    },
    list: async () => (await sql.rows<KeyRow>('SELECT * FROM signing_keys ORDER BY created_at, kid')).map(keyFromRow),
    insert: async (key) => {
      await sql.count(...insertOf('signing_keys', keyToRow(key)));
    },
    setState: async (kid, state, at) => {
      await sql.count(
        `UPDATE signing_keys SET state = $2::text,
           activated_at = CASE WHEN $2::text = 'current' THEN $3::bigint ELSE activated_at END,
           retired_at = CASE WHEN $2::text = 'retired' THEN $3::bigint ELSE retired_at END
         WHERE kid = $1`,
        [kid, state, at],
      );
    },
    remove: async (kid) => {
      await sql.count('DELETE FROM signing_keys WHERE kid = $1', [kid]);
    },
  };
}
