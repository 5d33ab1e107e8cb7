import {
  evidenceFromRow,
  evidenceToRow,
  gatewayConfigFromRow,
  gatewayConfigToRow,
  type ConfigRow,
  type EvidenceRow,
} from '../rows.js';
import type { GatewayStore } from '../types.js';
import { insertOf, type Sql } from './sql.js';

// A report issued before the stored one changes nothing, so a replayed old report cannot hide a newer one.
const KEEP_NEWEST = `ON CONFLICT (client_id, instance) DO UPDATE SET
  gateway = excluded.gateway, key_thumbprint = excluded.key_thumbprint, jti = excluded.jti, issued_at = excluded.issued_at,
  expires_at = excluded.expires_at, received_at = excluded.received_at, config = excluded.config, counts = excluded.counts,
  last_enforcement_at = excluded.last_enforcement_at, started_at = excluded.started_at, jws = excluded.jws
WHERE excluded.issued_at >= gateway_evidence.issued_at AND excluded.jti <> gateway_evidence.jti`;

export function postgresGatewayStore(sql: Sql): GatewayStore {
  return {
    latestConfig: async (clientId) => {
      const [row] = await sql.rows<ConfigRow>(
        'SELECT * FROM gateway_configs WHERE client_id = $1 ORDER BY version DESC LIMIT 1',
        [clientId],
      );
      return row ? gatewayConfigFromRow(row) : null;
    },
    insertConfig: async (config) =>
      (await sql.count(
        ...insertOf('gateway_configs', gatewayConfigToRow(config), 'ON CONFLICT (client_id, version) DO NOTHING'),
      )) === 1,
    recordEvidence: async (evidence) =>
      (await sql.count(...insertOf('gateway_evidence', evidenceToRow(evidence), KEEP_NEWEST))) === 1,
    forgetEvidence: (clientId, expiredBefore) =>
      sql.count('DELETE FROM gateway_evidence WHERE client_id = $1 AND expires_at < $2', [clientId, expiredBefore]),
    listEvidence: async (clientId, limit) =>
      (
        await sql.rows<EvidenceRow>(
          'SELECT * FROM gateway_evidence WHERE client_id = $1 ORDER BY received_at DESC, instance LIMIT $2',
          [clientId, limit],
        )
      ).map(evidenceFromRow),
  };
}
