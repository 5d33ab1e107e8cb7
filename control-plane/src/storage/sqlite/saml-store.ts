import type { KeyState, SamlStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import {
  samlKeyFromRow,
  samlKeyToRow,
  samlProviderFromRow,
  samlProviderToRow,
  type SamlKeyRow,
  type SamlProviderRow,
} from '../rows.js';

const isUnique = (error: unknown) => /UNIQUE constraint failed/.test((error as Error)?.message ?? '');

export function sqliteSamlStore(runner: Runner): SamlStore {
  return {
    // Transactions begin IMMEDIATE: the write lock is held already.
    lockRing: async () => {},
    keys: () =>
      runner.run((db) =>
        (cached(db, 'SELECT * FROM saml_keys ORDER BY created_at, kid').all() as SamlKeyRow[]).map(samlKeyFromRow),
      ),
    insertKey: (key) =>
      runner.run((db) => {
        cached(
          db,
          `INSERT INTO saml_keys (kid, state, certificate_pem, sealed_private_key, created_at, activated_at, retired_at, not_after)
           VALUES (@kid, @state, @certificate_pem, @sealed_private_key, @created_at, @activated_at, @retired_at, @not_after)`,
        ).run(samlKeyToRow(key));
      }),
    setKeyState: (kid: string, state: KeyState, at: number) =>
      runner.run((db) => {
        cached(
          db,
          `UPDATE saml_keys SET state = @state,
             activated_at = CASE WHEN @state = 'current' THEN @at ELSE activated_at END,
             retired_at = CASE WHEN @state = 'retired' THEN @at ELSE retired_at END
           WHERE kid = @kid`,
        ).run({ kid, state, at });
      }),
    removeKey: (kid) =>
      runner.run((db) => {
        cached(db, 'DELETE FROM saml_keys WHERE kid = ?').run(kid);
      }),
    insertProvider: (provider) =>
      runner.run((db) => {
        try {
          cached(
            db,
            `INSERT INTO saml_providers (id, entity_id, name, acs_urls, slo_url, certificate_pem, name_id_format, attributes,
               allow_idp_initiated, want_signed_requests, access_orgs, org_id, revision, created_at, updated_at)
             VALUES (@id, @entity_id, @name, @acs_urls, @slo_url, @certificate_pem, @name_id_format, @attributes,
               @allow_idp_initiated, @want_signed_requests, @access_orgs, @org_id, @revision, @created_at, @updated_at)`,
          ).run(samlProviderToRow(provider));
          return true;
        } catch (error) {
          if (isUnique(error)) return false;
          throw error;
        }
      }),
    provider: (id) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM saml_providers WHERE id = ?').get(id) as SamlProviderRow | undefined;
        return row ? samlProviderFromRow(row) : null;
      }),
    providerByEntityId: (entityId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM saml_providers WHERE entity_id = ?').get(entityId) as
          SamlProviderRow | undefined;
        return row ? samlProviderFromRow(row) : null;
      }),
    listProviders: (orgIds) =>
      runner.run((db) => {
        const rows = cached(db, 'SELECT * FROM saml_providers ORDER BY created_at, id').all() as SamlProviderRow[];
        const wanted = orgIds === undefined ? null : new Set(orgIds);
        return rows
          .filter((row) => wanted === null || (row.org_id !== null && wanted.has(row.org_id)))
          .map(samlProviderFromRow);
      }),
    updateProvider: (provider, revision) =>
      runner.run((db) => {
        const row = samlProviderToRow(provider);
        try {
          const changed = cached(
            db,
            `UPDATE saml_providers SET entity_id = @entity_id, name = @name, acs_urls = @acs_urls, slo_url = @slo_url,
               certificate_pem = @certificate_pem, name_id_format = @name_id_format, attributes = @attributes,
               allow_idp_initiated = @allow_idp_initiated, want_signed_requests = @want_signed_requests,
               access_orgs = @access_orgs, revision = @expected + 1, updated_at = @updated_at
             WHERE id = @id AND revision = @expected`,
          ).run({ ...row, expected: revision }).changes;
          return changed === 1 ? { ...provider, revision: revision + 1 } : null;
        } catch (error) {
          if (isUnique(error)) return 'taken' as const;
          throw error;
        }
      }),
    removeProvider: (id) =>
      runner.run((db) => cached(db, 'DELETE FROM saml_providers WHERE id = ?').run(id).changes === 1),
  };
}
