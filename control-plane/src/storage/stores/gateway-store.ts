import type { GatewayStore, IssuedGatewayConfig, StoredGatewayEvidence } from '../interface.js';
import { changedOne, firstRow, insertOf, type Sql } from '../sql.js';

interface ConfigRow {
  client_id: string;
  version: number;
  jws: string;
  hash: string;
  policy_hash: string;
  policy: string;
  kid: string;
  issued_at: number;
  expires_at: number;
}

const gatewayConfigToRow = (c: IssuedGatewayConfig): ConfigRow => ({
  client_id: c.clientId,
  version: c.version,
  jws: c.jws,
  hash: c.hash,
  policy_hash: c.policyHash,
  policy: JSON.stringify(c.policy),
  kid: c.kid,
  issued_at: c.issuedAt,
  expires_at: c.expiresAt,
});

const gatewayConfigFromRow = (row: ConfigRow): IssuedGatewayConfig => ({
  clientId: row.client_id,
  version: row.version,
  jws: row.jws,
  hash: row.hash,
  policyHash: row.policy_hash,
  policy: JSON.parse(row.policy),
  kid: row.kid,
  issuedAt: row.issued_at,
  expiresAt: row.expires_at,
});

interface EvidenceRow {
  client_id: string;
  instance: string;
  gateway: string;
  key_thumbprint: string;
  jti: string;
  issued_at: number;
  expires_at: number;
  received_at: number;
  config: string | null;
  counts: string;
  last_enforcement_at: number | null;
  started_at: number;
  jws: string;
}

const evidenceToRow = (e: StoredGatewayEvidence): EvidenceRow => ({
  client_id: e.clientId,
  instance: e.instance,
  gateway: e.gateway,
  key_thumbprint: e.keyThumbprint,
  jti: e.jti,
  issued_at: e.issuedAt,
  expires_at: e.expiresAt,
  received_at: e.receivedAt,
  config: e.config === null ? null : JSON.stringify(e.config),
  counts: JSON.stringify(e.counts),
  last_enforcement_at: e.lastEnforcementAt,
  started_at: e.startedAt,
  jws: e.jws,
});

const evidenceFromRow = (row: EvidenceRow): StoredGatewayEvidence => ({
  clientId: row.client_id,
  instance: row.instance,
  gateway: row.gateway,
  keyThumbprint: row.key_thumbprint,
  jti: row.jti,
  issuedAt: row.issued_at,
  expiresAt: row.expires_at,
  receivedAt: row.received_at,
  config: row.config === null ? null : JSON.parse(row.config),
  counts: JSON.parse(row.counts),
  lastEnforcementAt: row.last_enforcement_at,
  startedAt: row.started_at,
  jws: row.jws,
});

// A report issued before the stored one changes nothing, so a replayed old report cannot hide a newer one.
const KEEP_NEWEST = `ON CONFLICT (client_id, instance) DO UPDATE SET
  gateway = excluded.gateway, key_thumbprint = excluded.key_thumbprint, jti = excluded.jti, issued_at = excluded.issued_at,
  expires_at = excluded.expires_at, received_at = excluded.received_at, config = excluded.config, counts = excluded.counts,
  last_enforcement_at = excluded.last_enforcement_at, started_at = excluded.started_at, jws = excluded.jws
WHERE excluded.issued_at >= gateway_evidence.issued_at AND excluded.jti <> gateway_evidence.jti`;

export function gatewayStore(sql: Sql): GatewayStore {
  return {
    latestConfig: (clientId) =>
      firstRow(
        sql,
        'SELECT * FROM gateway_configs WHERE client_id = $1 ORDER BY version DESC LIMIT 1',
        [clientId],
        gatewayConfigFromRow,
      ),
    directoryGeneration: async () =>
      // PostgreSQL returns a BIGINT as a string.
      Number(
        (await sql.row<{ generation: number | string }>('SELECT generation FROM directory_generation WHERE id = 1'))!
          .generation,
      ),
    insertConfig: (config) =>
      changedOne(
        sql,
        ...insertOf('gateway_configs', gatewayConfigToRow(config), 'ON CONFLICT (client_id, version) DO NOTHING'),
      ),
    recordEvidence: (evidence) =>
      changedOne(sql, ...insertOf('gateway_evidence', evidenceToRow(evidence), KEEP_NEWEST)),
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
