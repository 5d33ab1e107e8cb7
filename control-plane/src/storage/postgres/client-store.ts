import { clientFromRow, clientToRow, type ClientRow } from '../rows.js';
import type { ClientStore, StoredClient } from '../types.js';
import { insertOf, type Sql } from './sql.js';

export function postgresClientStore(sql: Sql): ClientStore {
  return {
    insert: async (client) => {
      await sql.count(...insertOf('oidc_clients', clientToRow(client)));
    },
    get: async (clientId) => {
      const [row] = await sql.rows<ClientRow>('SELECT * FROM oidc_clients WHERE client_id = $1', [clientId]);
      return row ? clientFromRow(row) : null;
    },
    update: async (clientId, expectedRevision, change) => {
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
    remove: async (clientId) => (await sql.count('DELETE FROM oidc_clients WHERE client_id = $1', [clientId])) === 1,
    listByOwner: async (ownerId) =>
      (
        await sql.rows<ClientRow>('SELECT * FROM oidc_clients WHERE owner_id = $1 ORDER BY created_at, client_id', [
          ownerId,
        ])
      ).map(clientFromRow),
    list: async (after, limit) =>
      (
        await sql.rows<ClientRow>('SELECT * FROM oidc_clients WHERE client_id > $1 ORDER BY client_id LIMIT $2', [
          after ?? '',
          limit,
        ])
      ).map(clientFromRow),
    allRedirectUris: async () =>
      (await sql.rows<{ metadata: string }>('SELECT metadata FROM oidc_clients')).flatMap(
        (row) => (JSON.parse(row.metadata) as StoredClient['metadata']).redirect_uris,
      ),
    // metadata is JSON text (as in SQLite): read as jsonb for the filters below.
    listGateways: async () =>
      (
        await sql.rows<ClientRow>(
          `SELECT * FROM oidc_clients WHERE jsonb_typeof(metadata::jsonb -> 'gateway') <> 'null'
         ORDER BY created_at, client_id`,
        )
      ).map(clientFromRow),
    listInPlace: async () =>
      (
        await sql.rows<ClientRow>(
          `SELECT * FROM oidc_clients WHERE metadata::jsonb -> 'in_place' = 'true'::jsonb ORDER BY client_id`,
        )
      ).map(clientFromRow),
    // jsonb `?` on an array: does it hold this string as an element (exact match, as json_each in SQLite).
    findByRedirectUri: async (uri) =>
      (
        await sql.rows<ClientRow>(
          `SELECT * FROM oidc_clients WHERE metadata::jsonb -> 'redirect_uris' ? $1 ORDER BY created_at, client_id`,
          [uri],
        )
      ).map(clientFromRow),
  };
}
