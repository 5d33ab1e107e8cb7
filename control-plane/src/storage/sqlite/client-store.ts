import type { ClientStore, StoredClient } from '../types.js';
import type { Runner } from './serial-runner.js';

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

function fromRow(row: ClientRow): StoredClient {
  return {
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
  };
}

export function sqliteClientStore(runner: Runner): ClientStore {
  return {
    insert: (client) =>
      runner.run((db) => {
        db.prepare(
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
        const row = db.prepare('SELECT * FROM oidc_clients WHERE client_id = ?').get(clientId) as ClientRow | undefined;
        return row ? fromRow(row) : null;
      }),
    update: (clientId, expectedRevision, change) =>
      runner.run((db) => {
        const result = db.prepare(
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
        return fromRow(db.prepare('SELECT * FROM oidc_clients WHERE client_id = ?').get(clientId) as ClientRow);
      }),
    remove: (clientId) =>
      runner.run((db) => db.prepare('DELETE FROM oidc_clients WHERE client_id = ?').run(clientId).changes === 1),
    listByOwner: (ownerId) =>
      runner.run((db) =>
        (db.prepare('SELECT * FROM oidc_clients WHERE owner_id = ? ORDER BY created_at, client_id').all(ownerId) as ClientRow[]).map(fromRow),
      ),
    listGateways: () =>
      runner.run((db) =>
        (db.prepare("SELECT * FROM oidc_clients WHERE json_extract(metadata, '$.gateway') IS NOT NULL ORDER BY created_at, client_id").all() as ClientRow[]).map(fromRow),
      ),
    allRedirectUris: () =>
      runner.run((db) => {
        const rows = db.prepare('SELECT metadata FROM oidc_clients').all() as Array<{ metadata: string }>;
        return rows.flatMap((row) => (JSON.parse(row.metadata) as StoredClient['metadata']).redirect_uris);
      }),
    inPlaceRedirectUris: () =>
      runner.run((db) => {
        const rows = db.prepare("SELECT metadata FROM oidc_clients WHERE json_extract(metadata, '$.in_place') = 1").all() as Array<{ metadata: string }>;
        return rows.flatMap((row) => (JSON.parse(row.metadata) as StoredClient['metadata']).redirect_uris);
      }),
    findByRedirectUri: (uri) =>
      runner.run((db) =>
        (db.prepare(`SELECT DISTINCT c.* FROM oidc_clients c, json_each(c.metadata, '$.redirect_uris') r WHERE r.value = ? ORDER BY c.created_at, c.client_id`)
          .all(uri) as ClientRow[]).map(fromRow),
      ),
  };
}
