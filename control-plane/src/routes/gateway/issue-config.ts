import type { FastifyInstance } from 'fastify';
import { fail } from '../../../../lib/errors/keyplane-error.js';
import { GATEWAY_CONFIG_LIFETIME_SECONDS, REVOKED_SESSIONS_LIMIT, canReuseIssuedConfig, deriveIssuedPolicy, hashIssuedContent, signGatewayConfig } from '../../../../lib/gateway/config-issuance.js';
import { computeEnforcementStatus, type EnforcementReason, type EnforcementStatus } from '../../../../lib/gateway/enforcement-status.js';
import type { IssuedGatewayConfig, StoredClient, StoredGatewayEvidence } from '../../storage/types.js';

/** Instances considered in a status, most recently heard from first. */
const STATUS_INSTANCES = 50;

/**
 * What a config for this client states now: the registered policy with each route's resource,
 * and the deny list of its sessions revoked within the last session lifetime (a gateway session
 * cannot outlive the control-plane session it came from by longer, docs/gateway.md#revoked-sessions).
 */
async function issuedContent(app: FastifyInstance, client: StoredClient, sessions: FastifyInstance['kp']['storage']['sessions'], now: number) {
  const policy = deriveIssuedPolicy(client.metadata.gateway ?? noPolicy(), { redirectUris: client.metadata.redirect_uris, resources: client.metadata.resources });
  const since = now - app.kp.config.lifetimes.sessionAbsolute * 1000;
  const revokedSessions = await sessions.listRevokedForClient(client.clientId, since, REVOKED_SESSIONS_LIMIT);
  return { policy, revokedSessions, policyHash: hashIssuedContent(policy, revokedSessions) };
}

function noPolicy(): never {
  throw fail('no_gateway_policy', 'this client has no gateway metadata; add `gateway` to its registration (RFC 7592 update)');
}

/**
 * The config the control plane declares for a gateway client now: the newest issued one when it
 * may be served again (same policy, current key, less than half its lifetime old), otherwise a
 * new version. Minting happens in one storage transaction that reads the newest version again,
 * so two concurrent requests never issue one version with two contents (the gateway would
 * refuse that as equivocation).
 */
export async function currentGatewayConfig(app: FastifyInstance, client: StoredClient): Promise<IssuedGatewayConfig> {
  const { storage, keys, config } = app.kp;
  const now = app.kp.now();
  const key = keys.current();
  const wanted = await issuedContent(app, client, storage.sessions, now);
  const latest = await storage.gateway.latestConfig(client.clientId);
  if (canReuseIssuedConfig(latest, { policyHash: wanted.policyHash, kid: key.kid, now })) return latest!;
  return storage.transaction(async (tx) => {
    // Read both again inside the transaction: a registration update or another mint may have landed.
    const current = await tx.clients.get(client.clientId);
    const { policy: currentPolicy, revokedSessions, policyHash } = await issuedContent(app, current ?? noPolicy(), tx.sessions, now);
    const newest = await tx.gateway.latestConfig(client.clientId);
    if (canReuseIssuedConfig(newest, { policyHash, kid: key.kid, now })) return newest!;
    const version = (newest?.version ?? 0) + 1;
    const signed = await signGatewayConfig({
      issuer: config.issuer, clientId: client.clientId, version, policy: currentPolicy, revokedSessions, now, lifetimeSeconds: GATEWAY_CONFIG_LIFETIME_SECONDS,
    }, key);
    const issued: IssuedGatewayConfig = {
      clientId: client.clientId, version, jws: signed.jws, hash: signed.hash, policyHash, policy: currentPolicy, kid: key.kid,
      issuedAt: signed.issuedAt, expiresAt: signed.expiresAt,
    };
    if (!(await tx.gateway.insertConfig(issued))) throw fail('conflict', 'another config version was issued at the same moment; retry');
    await app.kp.events.record(tx, {
      type: 'gateway.config_issued', at: now, outcome: 'success', clientId: client.clientId, version, configHash: signed.hash, policyHash, mode: currentPolicy.mode, kid: key.kid,
    });
    return issued;
  });
}

export interface GatewayEnforcement {
  status: EnforcementStatus;
  reason: EnforcementReason;
  /** What a polling gateway gets next, so a registration update shows as a mismatch at once. */
  declared: IssuedGatewayConfig | null;
  observed: StoredGatewayEvidence[];
  now: number;
}

/** Declared config and observed evidence of a client, and the verdict on them (the status API and /apps). */
export async function gatewayEnforcement(app: FastifyInstance, client: StoredClient): Promise<GatewayEnforcement> {
  const declared = client.metadata.gateway ? await currentGatewayConfig(app, client) : null;
  const observed = await app.kp.storage.gateway.listEvidence(client.clientId, STATUS_INSTANCES);
  const now = app.kp.now();
  return { ...computeEnforcementStatus(declared, observed, now), declared, observed, now };
}
