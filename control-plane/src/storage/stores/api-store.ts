import type { ApiScope } from '#lib/apis/api-declaration.js';
import type { ApiStore, StoredApi } from '../interface.js';
import { changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface ApiRow {
  api_id: string;
  resource: string;
  name: string;
  org_id: string | null;
  scopes: string;
  allowed_clients: string;
  allowed_orgs: string;
  revision: number;
  created_at: number;
  updated_at: number;
}

const apiToRow = (api: StoredApi): ApiRow => ({
  api_id: api.apiId,
  resource: api.resource,
  name: api.name,
  org_id: api.orgId,
  scopes: JSON.stringify(api.scopes),
  allowed_clients: JSON.stringify(api.allowedClients),
  allowed_orgs: JSON.stringify(api.allowedOrgs),
  revision: api.revision,
  created_at: api.createdAt,
  updated_at: api.updatedAt,
});

const apiFromRow = (row: ApiRow): StoredApi => ({
  apiId: row.api_id,
  resource: row.resource,
  name: row.name,
  orgId: row.org_id,
  scopes: JSON.parse(row.scopes) as ApiScope[],
  allowedClients: JSON.parse(row.allowed_clients) as string[],
  allowedOrgs: JSON.parse(row.allowed_orgs) as string[],
  revision: Number(row.revision),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export function apiStore(sql: Sql): ApiStore {
  return {
    insert: (api) => changedOne(sql, ...insertOf('apis', apiToRow(api), 'ON CONFLICT (resource) DO NOTHING')),
    get: (apiId) => firstRow(sql, 'SELECT * FROM apis WHERE api_id = $1', [apiId], apiFromRow),
    getByResource: (resource) => firstRow(sql, 'SELECT * FROM apis WHERE resource = $1', [resource], apiFromRow),
    list: async (orgId) => {
      const rows =
        orgId === undefined
          ? await sql.rows<ApiRow>('SELECT * FROM apis ORDER BY created_at, api_id')
          : orgId === null
            ? await sql.rows<ApiRow>('SELECT * FROM apis WHERE org_id IS NULL ORDER BY created_at, api_id')
            : await sql.rows<ApiRow>('SELECT * FROM apis WHERE org_id = $1 ORDER BY created_at, api_id', [orgId]);
      return rows.map(apiFromRow);
    },
    update: async (api, revision) => {
      const row = apiToRow(api);
      const changed = await sql.count(
        `UPDATE apis SET name = $2, scopes = $3, allowed_clients = $4, allowed_orgs = $5,
           revision = CAST($6 AS INTEGER) + 1, updated_at = $7
         WHERE api_id = $1 AND revision = CAST($6 AS INTEGER)`,
        [row.api_id, row.name, row.scopes, row.allowed_clients, row.allowed_orgs, revision, row.updated_at],
      );
      if (changed !== 1) return null;
      return firstRow(sql, 'SELECT * FROM apis WHERE api_id = $1', [api.apiId], apiFromRow);
    },
    remove: (apiId) => changedOne(sql, 'DELETE FROM apis WHERE api_id = $1', [apiId]),
  };
}
