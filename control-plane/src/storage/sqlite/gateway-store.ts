import type { GatewayStore } from '../types.js';
import { cached, type Runner } from './serial-runner.js';
import { evidenceFromRow, gatewayConfigFromRow as configFromRow, type ConfigRow, type EvidenceRow } from '../rows.js';

export function sqliteGatewayStore(runner: Runner): GatewayStore {
  return {
    latestConfig: (clientId) =>
      runner.run((db) => {
        const row = cached(db, 'SELECT * FROM gateway_configs WHERE client_id = ? ORDER BY version DESC LIMIT 1').get(
          clientId,
        ) as ConfigRow | undefined;
        return row ? configFromRow(row) : null;
      }),
    insertConfig: (config) =>
      runner.run(
        (db) =>
          cached(
            db,
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
      runner.run(
        (db) =>
          cached(
            db,
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
      runner.run(
        (db) =>
          cached(db, 'DELETE FROM gateway_evidence WHERE client_id = ? AND expires_at < ?').run(clientId, expiredBefore)
            .changes,
      ),
    listEvidence: (clientId, limit) =>
      runner.run((db) =>
        (
          cached(
            db,
            'SELECT * FROM gateway_evidence WHERE client_id = ? ORDER BY received_at DESC, instance LIMIT ?',
          ).all(clientId, limit) as EvidenceRow[]
        ).map(evidenceFromRow),
      ),
  };
}
