import type { KeyState, KeyStore, StoredSigningKey } from '../types.js';
import type { Runner } from './serial-runner.js';

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

export function sqliteKeyStore(runner: Runner): KeyStore {
  return {
    list: () =>
      runner.run((db) =>
        (db.prepare('SELECT * FROM signing_keys ORDER BY created_at, kid').all() as KeyRow[]).map(fromRow),
      ),
    insert: (key) =>
      runner.run((db) => {
        db.prepare(
          `INSERT INTO signing_keys (kid, alg, state, public_jwk, sealed_private_jwk, created_at, activated_at, retired_at)
           VALUES (@kid, @alg, @state, @public_jwk, @sealed_private_jwk, @created_at, @activated_at, @retired_at)`,
        ).run({
          kid: key.kid,
          alg: key.alg,
          state: key.state,
          public_jwk: JSON.stringify(key.publicJwk),
          sealed_private_jwk: key.sealedPrivateJwk,
          created_at: key.createdAt,
          activated_at: key.activatedAt,
          retired_at: key.retiredAt,
        });
      }),
    setState: (kid: string, state: KeyState, at: number) =>
      runner.run((db) => {
        db.prepare(
          `UPDATE signing_keys SET state = @state,
             activated_at = CASE WHEN @state = 'current' THEN @at ELSE activated_at END,
             retired_at = CASE WHEN @state = 'retired' THEN @at ELSE retired_at END
           WHERE kid = @kid`,
        ).run({ kid, state, at });
      }),
    remove: (kid) =>
      runner.run((db) => {
        db.prepare('DELETE FROM signing_keys WHERE kid = ?').run(kid);
      }),
  };
}

function fromRow(row: KeyRow): StoredSigningKey {
  return {
    kid: row.kid,
    alg: 'ES256',
    state: row.state as KeyState,
    publicJwk: JSON.parse(row.public_jwk),
    sealedPrivateJwk: row.sealed_private_jwk,
    createdAt: row.created_at,
    activatedAt: row.activated_at,
    retiredAt: row.retired_at,
  };
}
