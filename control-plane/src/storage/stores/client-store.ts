import { insertOf, type Sql } from '../sql.js';
import type { ClientStore, StoredClient } from '../interface.js';

interface ClientRow {
  client_id: string;
  client_type: string;
  auth_method: string;
  secret_hash: string | null;
  secret_issued_at: number | null;
  metadata: string;
  owner_id: string | null;
  registration_token_hash: string;
  revision: number;
  created_at: number;
  updated_at: number;
}

const clientToRow = (c: StoredClient): ClientRow => ({
  client_id: c.clientId,
  client_type: c.type,
  auth_method: c.metadata.token_endpoint_auth_method,
  secret_hash: c.secretHash,
  secret_issued_at: c.secretIssuedAt,
  metadata: JSON.stringify(c.metadata),
  owner_id: c.ownerId,
  registration_token_hash: c.registrationTokenHash,
  revision: c.revision,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

const clientFromRow = (row: ClientRow): StoredClient => ({
  clientId: row.client_id,
  type: row.client_type as StoredClient['type'],
  metadata: JSON.parse(row.metadata),
  secretHash: row.secret_hash,
  secretIssuedAt: row.secret_issued_at,
  ownerId: row.owner_id,
  registrationTokenHash: row.registration_token_hash,
  revision: row.revision,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** How many client rows the read cache holds at most (the oldest read goes first). */
const CACHED_CLIENTS = 1024;

/**
 * The rows of clients read outside transactions, by client id: every token, revocation and
 * introspection request reads its client, and the row changes only through this store, which
 * drops it on every write (inside a transaction too, so a rolled-back write only costs a re-read).
 * Only SQLite caches: its file has one writer, this process, while PostgreSQL is shared by
 * replicas that must see another's revocation at once.
 */
export class ClientRowCache {
  readonly rows = new Map<string, ClientRow>();
  /** Counts the writes: a row read before one is not cached after it. */
  generation = 0;

  forget(clientId: string): void {
    this.rows.delete(clientId);
    this.generation++;
  }
}

/** `cache` with `reads` set serves and fills it (outside transactions); without, writes still drop from it. */
export function clientStore(sql: Sql, cache?: { rows: ClientRowCache; reads: boolean }): ClientStore {
  const { dialect } = sql;
  const forget = (clientId: string) => cache?.rows.forget(clientId);
  const list = async (text: string, values?: unknown[]) => (await sql.rows<ClientRow>(text, values)).map(clientFromRow);
  const GATEWAYS = `SELECT * FROM oidc_clients WHERE ${dialect.jsonHas('metadata', 'gateway')} ORDER BY created_at, client_id`;
  const IN_PLACE = `SELECT * FROM oidc_clients WHERE ${dialect.jsonIsTrue('metadata', 'in_place')} ORDER BY client_id`;
  const BY_REDIRECT_URI = `SELECT * FROM oidc_clients WHERE ${dialect.jsonArrayHolds('metadata', 'redirect_uris', '$1')}
    ORDER BY created_at, client_id`;
  return {
    insert: async (client) => {
      forget(client.clientId);
      await sql.count(...insertOf('oidc_clients', clientToRow(client)));
    },
    get: async (clientId) => {
      const reads = cache?.reads ? cache.rows : undefined;
      const hit = reads?.rows.get(clientId);
      // Parsed on every read: callers get a record of their own.
      if (hit) return clientFromRow(hit);
      const generation = reads?.generation;
      const [row] = await sql.rows<ClientRow>('SELECT * FROM oidc_clients WHERE client_id = $1', [clientId]);
      if (!row) return null;
      if (reads && reads.generation === generation) {
        if (reads.rows.size >= CACHED_CLIENTS) reads.rows.delete(reads.rows.keys().next().value!);
        reads.rows.set(clientId, row);
      }
      return clientFromRow(row);
    },
    update: async (clientId, expectedRevision, change) => {
      forget(clientId);
      const [row] = await sql.rows<ClientRow>(
        `UPDATE oidc_clients SET client_type = $3, auth_method = $4, metadata = $5, secret_hash = $6, secret_issued_at = $7,
           revision = revision + 1, updated_at = $8
         WHERE client_id = $1 AND revision = $2 RETURNING *`,
        [
          clientId,
          expectedRevision,
          change.type,
          change.metadata.token_endpoint_auth_method,
          JSON.stringify(change.metadata),
          change.secretHash,
          change.secretIssuedAt,
          change.at,
        ],
      );
      return row ? clientFromRow(row) : null;
    },
    remove: async (clientId) => {
      forget(clientId);
      return (await sql.count('DELETE FROM oidc_clients WHERE client_id = $1', [clientId])) === 1;
    },
    listByOwner: (ownerId) =>
      list('SELECT * FROM oidc_clients WHERE owner_id = $1 ORDER BY created_at, client_id', [ownerId]),
    list: (after, limit) =>
      list('SELECT * FROM oidc_clients WHERE client_id > $1 ORDER BY client_id LIMIT $2', [after ?? '', limit]),
    allRedirectUris: async () =>
      (await sql.rows<{ metadata: string }>('SELECT metadata FROM oidc_clients')).flatMap(
        (row) => (JSON.parse(row.metadata) as StoredClient['metadata']).redirect_uris,
      ),
    listGateways: () => list(GATEWAYS),
    listInPlace: () => list(IN_PLACE),
    findByRedirectUri: (uri) => list(BY_REDIRECT_URI, [uri]),
  };
}
