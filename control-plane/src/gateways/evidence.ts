import { fail } from '../../../lib/errors/keyplane-error.js';
import { isProtocolError } from '../../../lib/errors/protocol-error.js';
import { verifyGatewayEvidence } from '../../../lib/gateway/evidence.js';
import type { Registrar } from '../clients/registration.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/types.js';
import { gatewayEnforcement, type GatewayEnforcement, type GatewayServices } from './issue-config.js';

/** How long the report of an instance that stopped reporting is kept after it expired. */
export const EVIDENCE_KEPT_MS = 7 * 24 * 3600 * 1000;

/**
 * Verifies a gateway instance's signed report for its (authenticated) client and stores it as
 * that instance's newest observation (docs/gateway.md#evidence).
 */
export async function acceptEvidence(
  services: Pick<ControlPlaneServices, 'config' | 'storage' | 'now'>,
  client: StoredClient,
  jws: string,
): Promise<void> {
  const now = services.now();
  let verified;
  try {
    verified = await verifyGatewayEvidence(jws, {
      audience: services.config.issuer,
      clientId: client.clientId,
      now,
      // Without registered keys the report's own key is accepted, because the channel is
      // client-authenticated; its thumbprint is recorded so a key change shows.
      ...(client.metadata.jwks ? { registeredKeys: client.metadata.jwks.keys } : {}),
    });
  } catch (error) {
    // The evidence checks word their refusals for the gateway that sent it; nothing else is passed on.
    if (isProtocolError(error, 'invalid_evidence')) throw fail('invalid_evidence', error.message);
    throw error;
  }
  await services.storage.gateway.recordEvidence({ ...verified, receivedAt: now, jws });
  // Every restart is a new instance: reports of instances silent for a week are history, not status.
  await services.storage.gateway.forgetEvidence(client.clientId, now - EVIDENCE_KEPT_MS);
}

/**
 * Declared config next to observed evidence for a client its registrar may see: the operator
 * sees every client, a session only the clients it owns. Someone else's client answers like a
 * missing one, so client ids cannot be probed.
 */
export async function enforcementOf(
  services: GatewayServices,
  registrar: Registrar,
  clientId: string,
): Promise<{ client: StoredClient } & GatewayEnforcement> {
  const client = await services.storage.clients.get(clientId);
  if (!client || (registrar.by === 'session' && client.ownerId !== registrar.ownerId))
    throw fail('not_found', 'no such client');
  return { client, ...(await gatewayEnforcement(services, client)) };
}
