import type { ClientStore, StoredClient } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { clientFromRow as fromRow, type ClientRow } from '../rows.js';

/** How many client rows the read cache holds at most (the oldest read goes first). */
const CACHED_CLIENTS = 1024;

/**
 * The rows of clients read outside transactions, by client id: every token, revocation and
 * introspection request reads its client, and the row changes only through this store, which
 * drops it on every write (inside a transaction too, so a rolled-back write only costs a re-read).
 * Only SQLite caches: its file has one writer, this process, while PostgreSQL is shared by
 * replicas that must see another's revocation at once.
 */
export type ClientRowCache = Map<string, ClientRow>;

export function sqliteClientStore(runner: Runner, rows: ClientRowCache, readsCache: boolean): ClientStore {
  const forget = (clientId: string) => void rows.delete(clientId);
  return {
    insert: (client) =>
      runner.run((db) => {
        forget(client.clientId);
        cached(
          db,
          `INSERT INTO oidc_clients (client_id, client_type, auth_method, secret_hash, secret_issued_at, metadata, owner_id,
             registration_token_hash, revision, created_at, updated_at)
           VALUES (@client_id, @client_type, @auth_method, @secret_hash, @secret_issued_at, @metadata, @owner_id,
             @registration_token_hash, @revision, @created_at, @updated_at)`,
        ).run({
          client_id: client.clientId,
          client_type: client.type,
          auth_method: client.metadata.token_endpoint_auth_method,
          secret_hash: client.secretHash,
          secret_issued_at: client.secretIssuedAt,
          metadata: JSON.stringify(client.metadata),
          owner_id: client.ownerId,
          registration_token_hash: client.registrationTokenHash,
          revision: client.revision,
          created_at: client.createdAt,
          updated_at: client.updatedAt,
        });
      }),
    get: (clientId) =>
      runner.run((db) => {
        let row = readsCache ? rows.get(clientId) : undefined;
        if (!row) {
          row = cached(db, 'SELECT * FROM oidc_clients WHERE client_id = ?').get(clientId) as ClientRow | undefined;
          if (!row) return null;
          if (readsCache) {
            if (rows.size >= CACHED_CLIENTS) forget(rows.keys().next().value!);
            rows.set(clientId, row);
          }
        }
        // Parsed on every read: callers get a record of their own.
        return fromRow(row);
      }),
    update: (clientId, expectedRevision, change) =>
      runner.run((db) => {
        forget(clientId);
        const result = cached(
          db,
          `UPDATE oidc_clients SET client_type = @client_type, auth_method = @auth_method, metadata = @metadata,
             secret_hash = @secret_hash, secret_issued_at = @secret_issued_at, revision = revision + 1, updated_at = @at
           WHERE client_id = @client_id AND revision = @expected`,
        ).run({
          client_id: clientId,
          expected: expectedRevision,
          client_type: change.type,
          auth_method: change.metadata.token_endpoint_auth_method,
          metadata: JSON.stringify(change.metadata),
          secret_hash: change.secretHash,
          secret_issued_at: change.secretIssuedAt,
          at: change.at,
        });
        if (result.changes !== 1) return null;
        return fromRow(cached(db, 'SELECT * FROM oidc_clients WHERE client_id = ?').get(clientId) as ClientRow);
      }),
    remove: (clientId) =>
      runner.run((db) => {
        forget(clientId);
        return cached(db, 'DELETE FROM oidc_clients WHERE client_id = ?').run(clientId).changes === 1;
      }),
    listByOwner: (ownerId) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM oidc_clients WHERE owner_id = ? ORDER BY created_at, client_id').all(
            ownerId,
          ) as ClientRow[]
        ).map(fromRow),
      ),
    list: (after, limit) =>
      runner.run((db) =>
        (
          cached(db, 'SELECT * FROM oidc_clients WHERE client_id > ? ORDER BY client_id LIMIT ?').all(
            after ?? '',
            limit,
          ) as ClientRow[]
        ).map(fromRow),
      ),
    listGateways: () =>
      runner.run((db) =>
        (
          cached(
            db,
            "SELECT * FROM oidc_clients WHERE json_extract(metadata, '$.gateway') IS NOT NULL ORDER BY created_at, client_id",
          ).all() as ClientRow[]
        ).map(fromRow),
      ),
    allRedirectUris: () =>
      runner.run((db) => {
        const rows = cached(db, 'SELECT metadata FROM oidc_clients').all() as Array<{ metadata: string }>;
        return rows.flatMap((row) => (JSON.parse(row.metadata) as StoredClient['metadata']).redirect_uris);
      }),
    listInPlace: () =>
      runner.run((db) =>
        (
          cached(
            db,
            "SELECT * FROM oidc_clients WHERE json_extract(metadata, '$.in_place') = 1 ORDER BY client_id",
          ).all() as ClientRow[]
        ).map(fromRow),
      ),
    findByRedirectUri: (uri) =>
      runner.run((db) =>
        (
          cached(
            db,
            `SELECT DISTINCT c.* FROM oidc_clients c, json_each(c.metadata, '$.redirect_uris') r WHERE r.value = ? ORDER BY c.created_at, c.client_id`,
          ).all(uri) as ClientRow[]
        ).map(fromRow),
      ),
  };
}
