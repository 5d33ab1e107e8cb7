import type { OrgRule } from '#lib/access/evaluate-access.js';
import type { KeyState, SamlStore, StoredSamlKey, StoredSamlProvider } from '../interface.js';
import { SAML_RING_LOCK } from '../locks.js';
import { changedOne, firstRow, insertOf, Rollback, type Sql } from '../sql.js';
import { setRingKeyState } from './key-store.js';

interface SamlKeyRow {
  kid: string;
  state: string;
  certificate_pem: string;
  sealed_private_key: Buffer;
  created_at: number;
  activated_at: number | null;
  retired_at: number | null;
  not_after: number;
}

const samlKeyToRow = (key: StoredSamlKey): SamlKeyRow => ({
  kid: key.kid,
  state: key.state,
  certificate_pem: key.certificatePem,
  sealed_private_key: key.sealedPrivateKey,
  created_at: key.createdAt,
  activated_at: key.activatedAt,
  retired_at: key.retiredAt,
  not_after: key.notAfter,
});

const samlKeyFromRow = (row: SamlKeyRow): StoredSamlKey => ({
  kid: row.kid,
  state: row.state as KeyState,
  certificatePem: row.certificate_pem,
  sealedPrivateKey: Buffer.from(row.sealed_private_key),
  createdAt: Number(row.created_at),
  activatedAt: row.activated_at === null ? null : Number(row.activated_at),
  retiredAt: row.retired_at === null ? null : Number(row.retired_at),
  notAfter: Number(row.not_after),
});

interface SamlProviderRow {
  id: string;
  entity_id: string;
  name: string | null;
  acs_urls: string;
  slo_url: string | null;
  certificate_pem: string;
  name_id_format: string;
  attributes: string;
  allow_idp_initiated: number;
  want_signed_requests: number;
  access_orgs: string | null;
  org_id: string | null;
  revision: number;
  created_at: number;
  updated_at: number;
}

const samlProviderToRow = (p: StoredSamlProvider): SamlProviderRow => ({
  id: p.id,
  entity_id: p.entityId,
  name: p.name,
  acs_urls: JSON.stringify(p.acsUrls),
  slo_url: p.sloUrl,
  certificate_pem: p.certificatePem,
  name_id_format: p.nameIdFormat,
  attributes: JSON.stringify(p.attributes),
  allow_idp_initiated: p.allowIdpInitiated ? 1 : 0,
  want_signed_requests: p.wantSignedRequests ? 1 : 0,
  access_orgs: p.accessOrgs === null ? null : JSON.stringify(p.accessOrgs),
  org_id: p.orgId,
  revision: p.revision,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
});

const samlProviderFromRow = (row: SamlProviderRow): StoredSamlProvider => ({
  id: row.id,
  entityId: row.entity_id,
  name: row.name,
  acsUrls: JSON.parse(row.acs_urls) as string[],
  sloUrl: row.slo_url,
  certificatePem: row.certificate_pem,
  nameIdFormat: row.name_id_format,
  attributes: JSON.parse(row.attributes) as Record<string, string>,
  allowIdpInitiated: Number(row.allow_idp_initiated) === 1,
  wantSignedRequests: Number(row.want_signed_requests) === 1,
  accessOrgs:
    row.access_orgs === null || row.access_orgs === undefined ? null : (JSON.parse(row.access_orgs) as OrgRule[]),
  orgId: row.org_id,
  revision: Number(row.revision),
  createdAt: Number(row.created_at),
  updatedAt: Number(row.updated_at),
});

export function samlStore(sql: Sql): SamlStore {
  return {
    lockRing: async () => {
      await sql.dialect.lock(sql, SAML_RING_LOCK);
    },
    keys: async () =>
      (await sql.rows<SamlKeyRow>('SELECT * FROM saml_keys ORDER BY created_at, kid')).map(samlKeyFromRow),
    insertKey: async (key) => {
      await sql.count(...insertOf('saml_keys', samlKeyToRow(key)));
    },
    setKeyState: (kid, state, at) => setRingKeyState(sql, 'saml_keys', kid, state, at),
    removeKey: async (kid) => {
      await sql.count('DELETE FROM saml_keys WHERE kid = $1', [kid]);
    },
    insertProvider: (provider) =>
      changedOne(sql, ...insertOf('saml_providers', samlProviderToRow(provider), 'ON CONFLICT (entity_id) DO NOTHING')),
    provider: (id) => firstRow(sql, 'SELECT * FROM saml_providers WHERE id = $1', [id], samlProviderFromRow),
    providerByEntityId: (entityId) =>
      firstRow(sql, 'SELECT * FROM saml_providers WHERE entity_id = $1', [entityId], samlProviderFromRow),
    listProviders: async (orgIds) => {
      const rows =
        orgIds === undefined
          ? await sql.rows<SamlProviderRow>('SELECT * FROM saml_providers ORDER BY created_at, id')
          : await sql.rows<SamlProviderRow>(
              `SELECT * FROM saml_providers WHERE ${sql.dialect.inList('org_id', '$1')} ORDER BY created_at, id`,
              [sql.dialect.list(orgIds)],
            );
      return rows.map(samlProviderFromRow);
    },
    updateProvider: async (provider, revision) => {
      const row = samlProviderToRow(provider);
      try {
        // A savepoint: a unique violation must not spoil the caller's transaction.
        return await sql.atomic(async (inner) => {
          const changed = await inner.count(
            `UPDATE saml_providers SET entity_id = $2, name = $3, acs_urls = $4, slo_url = $5, certificate_pem = $6,
               name_id_format = $7, attributes = $8, allow_idp_initiated = $9, want_signed_requests = $10,
               access_orgs = $13, revision = CAST($11 AS INTEGER) + 1, updated_at = $12
             WHERE id = $1 AND revision = CAST($11 AS INTEGER)`,
            [
              row.id,
              row.entity_id,
              row.name,
              row.acs_urls,
              row.slo_url,
              row.certificate_pem,
              row.name_id_format,
              row.attributes,
              row.allow_idp_initiated,
              row.want_signed_requests,
              revision,
              row.updated_at,
              row.access_orgs,
            ],
          );
          if (changed !== 1) throw new Rollback(null);
          return { ...provider, revision: revision + 1 };
        });
      } catch (error) {
        if (sql.dialect.isUniqueViolation(error)) return 'taken' as const;
        throw error;
      }
    },
    removeProvider: (id) => changedOne(sql, 'DELETE FROM saml_providers WHERE id = $1', [id]),
  };
}
