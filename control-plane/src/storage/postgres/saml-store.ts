import {
  samlKeyFromRow,
  samlKeyToRow,
  samlProviderFromRow,
  samlProviderToRow,
  type SamlKeyRow,
  type SamlProviderRow,
} from '../rows.js';
import type { SamlStore } from '../types.js';
import { SAML_RING_LOCK } from '../locks.js';
import { insertOf, isUniqueViolation, Rollback, type Sql } from './sql.js';

export function postgresSamlStore(sql: Sql): SamlStore {
  return {
    lockRing: async () => {
      await sql.rows('SELECT pg_advisory_xact_lock($1)', [SAML_RING_LOCK]);
    },
    keys: async () =>
      (await sql.rows<SamlKeyRow>('SELECT * FROM saml_keys ORDER BY created_at, kid')).map(samlKeyFromRow),
    insertKey: async (key) => {
      await sql.count(...insertOf('saml_keys', samlKeyToRow(key)));
    },
    setKeyState: async (kid, state, at) => {
      await sql.count(
        `UPDATE saml_keys SET state = $2::text,
           activated_at = CASE WHEN $2::text = 'current' THEN $3::bigint ELSE activated_at END,
           retired_at = CASE WHEN $2::text = 'retired' THEN $3::bigint ELSE retired_at END
         WHERE kid = $1`,
        [kid, state, at],
      );
    },
    removeKey: async (kid) => {
      await sql.count('DELETE FROM saml_keys WHERE kid = $1', [kid]);
    },
    insertProvider: async (provider) =>
      (await sql.count(
        ...insertOf('saml_providers', samlProviderToRow(provider), 'ON CONFLICT (entity_id) DO NOTHING'),
      )) === 1,
    provider: async (id) => {
      const [row] = await sql.rows<SamlProviderRow>('SELECT * FROM saml_providers WHERE id = $1', [id]);
      return row ? samlProviderFromRow(row) : null;
    },
    providerByEntityId: async (entityId) => {
      const [row] = await sql.rows<SamlProviderRow>('SELECT * FROM saml_providers WHERE entity_id = $1', [entityId]);
      return row ? samlProviderFromRow(row) : null;
    },
    listProviders: async (orgIds) => {
      const rows =
        orgIds === undefined
          ? await sql.rows<SamlProviderRow>('SELECT * FROM saml_providers ORDER BY created_at, id')
          : await sql.rows<SamlProviderRow>(
              'SELECT * FROM saml_providers WHERE org_id = ANY($1::text[]) ORDER BY created_at, id',
              [orgIds],
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
               access_orgs = $13, revision = $11::integer + 1, updated_at = $12
             WHERE id = $1 AND revision = $11::integer`,
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
        if (isUniqueViolation(error)) return 'taken' as const;
        throw error;
      }
    },
    removeProvider: async (id) => (await sql.count('DELETE FROM saml_providers WHERE id = $1', [id])) === 1,
  };
}
