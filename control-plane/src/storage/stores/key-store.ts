import type { KeyState, KeyStore, StoredSigningKey } from '../interface.js';
import { SIGNING_RING_LOCK } from '../locks.js';
import { insertOf, type Sql } from '../sql.js';

interface KeyRow {
  kid: string;
  alg: string;
  state: string;
  public_jwk: string;
  sealed_private_jwk: Buffer;
  created_at: number;
  activated_at: number | null;
  retired_at: number | null;
}

const keyToRow = (key: StoredSigningKey): KeyRow => ({
  kid: key.kid,
  alg: key.alg,
  state: key.state,
  public_jwk: JSON.stringify(key.publicJwk),
  sealed_private_jwk: key.sealedPrivateJwk,
  created_at: key.createdAt,
  activated_at: key.activatedAt,
  retired_at: key.retiredAt,
});

const keyFromRow = (row: KeyRow): StoredSigningKey => ({
  kid: row.kid,
  alg: 'ES256',
  state: row.state as KeyState,
  publicJwk: JSON.parse(row.public_jwk),
  sealedPrivateJwk: row.sealed_private_jwk,
  createdAt: row.created_at,
  activatedAt: row.activated_at,
  retiredAt: row.retired_at,
});

const ringStates = new Map<string, string>();

/** Moves a key of a ring (`signing_keys`, `saml_keys`) to `state`, stamping when it became current or retired. */
export async function setRingKeyState(
  sql: Sql,
  table: string,
  kid: string,
  state: KeyState,
  at: number,
): Promise<void> {
  let text = ringStates.get(table);
  if (!text)
    ringStates.set(
      table,
      (text = `UPDATE ${table} SET state = CAST($2 AS TEXT),
        activated_at = CASE WHEN CAST($2 AS TEXT) = 'current' THEN CAST($3 AS BIGINT) ELSE activated_at END,
        retired_at = CASE WHEN CAST($2 AS TEXT) = 'retired' THEN CAST($3 AS BIGINT) ELSE retired_at END
      WHERE kid = $1`),
    );
  await sql.count(text, [kid, state, at]);
}

export function keyStore(sql: Sql): KeyStore {
  return {
    lockRing: async () => {
      await sql.dialect.lock(sql, SIGNING_RING_LOCK);
    },
    list: async () => (await sql.rows<KeyRow>('SELECT * FROM signing_keys ORDER BY created_at, kid')).map(keyFromRow),
    insert: async (key) => {
      await sql.count(...insertOf('signing_keys', keyToRow(key)));
    },
    setState: (kid, state, at) => setRingKeyState(sql, 'signing_keys', kid, state, at),
    remove: async (kid) => {
      await sql.count('DELETE FROM signing_keys WHERE kid = $1', [kid]);
    },
  };
}
