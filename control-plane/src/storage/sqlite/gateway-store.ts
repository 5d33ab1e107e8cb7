import type { GatewayStore, IssuedGatewayConfig, StoredGatewayEvidence } from '../types.js';
import type { Runner } from './serial-runner.js';

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

function configFromRow(row: ConfigRow): IssuedGatewayConfig {
  return {
    clientId: row.client_id,
    version: row.version,
    jws: row.jws,
    hash: row.hash,
    policyHash: row.policy_hash,
    policy: JSON.parse(row.policy),
    kid: row.kid,
    issuedAt: row.issued_at,
    expiresAt: row.expires_at,
  };
}

function evidenceFromRow(row: EvidenceRow): StoredGatewayEvidence {
  return {
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
  };
}

export function sqliteGatewayStore(runner: Runner): GatewayStore {
  return {
    latestConfig: (clientId) =>
      runner.run((db) => {
        const row = db.prepare('SELECT * FROM gateway_configs WHERE client_id = ? ORDER BY version DESC LIMIT 1').get(clientId) as ConfigRow | undefined;
        return row ? configFromRow(row) : null;
      }),
    insertConfig: (config) =>
      runner.run((db) =>
        db.prepare(
          `INSERT INTO gateway_configs (client_id, version, jws, hash, policy_hash, policy, kid, issued_at, expires_at)
           VALUES (@client_id, @version, @jws, @hash, @policy_hash, @policy, @kid, @issued_at, @expires_at)
           ON CONFLICT (client_id, version) DO NOTHING`,
        ).run({
          client_id: config.clientId,
          version: config.version,
          jws: config.jws,
          hash: config.hash,
          policy_hash: config.policyHash,
          policy: JSON.stringify(config.policy),
          kid: config.kid,
          issued_at: config.issuedAt,
          expires_at: config.expiresAt,
        }).changes === 1,
      ),
    recordEvidence: (evidence) =>
      runner.run((db) =>
        db.prepare(
          `INSERT INTO gateway_evidence (client_id, instance, gateway, key_thumbprint, jti, issued_at, expires_at, received_at, config, counts,
             last_enforcement_at, started_at, jws)
           VALUES (@client_id, @instance, @gateway, @key_thumbprint, @jti, @issued_at, @expires_at, @received_at, @config, @counts,
             @last_enforcement_at, @started_at, @jws)
           ON CONFLICT (client_id, instance) DO UPDATE SET
             gateway = excluded.gateway, key_thumbprint = excluded.key_thumbprint, jti = excluded.jti, issued_at = excluded.issued_at,
             expires_at = excluded.expires_at, received_at = excluded.received_at, config = excluded.config, counts = excluded.counts,
             last_enforcement_at = excluded.last_enforcement_at, started_at = excluded.started_at, jws = excluded.jws
           WHERE excluded.issued_at >= gateway_evidence.issued_at AND excluded.jti <> gateway_evidence.jti`,
        ).run({
          client_id: evidence.clientId,
          instance: evidence.instance,
          gateway: evidence.gateway,
          key_thumbprint: evidence.keyThumbprint,
          jti: evidence.jti,
          issued_at: evidence.issuedAt,
          expires_at: evidence.expiresAt,
          received_at: evidence.receivedAt,
          config: evidence.config === null ? null : JSON.stringify(evidence.config),
          counts: JSON.stringify(evidence.counts),
          last_enforcement_at: evidence.lastEnforcementAt,
          started_at: evidence.startedAt,
          jws: evidence.jws,
        }).changes === 1,
      ),
    forgetEvidence: (clientId, expiredBefore) =>
      runner.run((db) => db.prepare('DELETE FROM gateway_evidence WHERE client_id = ? AND expires_at < ?').run(clientId, expiredBefore).changes),
    listEvidence: (clientId, limit) =>
      runner.run((db) =>
        (db.prepare('SELECT * FROM gateway_evidence WHERE client_id = ? ORDER BY received_at DESC, instance LIMIT ?').all(clientId, limit) as EvidenceRow[]).map(evidenceFromRow),
      ),
  };
}
