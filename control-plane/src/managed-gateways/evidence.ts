import { fail } from '#lib/errors/keyplane-error.js';
import { isProtocolError } from '#lib/errors/protocol-error.js';
import { verifyGatewayEvidence } from '#lib/gateway-protocol/evidence.js';
import type { Registrar } from '../clients/registration.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';
import { gatewayEnforcement, type GatewayEnforcement, type GatewayServices } from './issue-config.js';

/** How long the report of an instance that stopped reporting is kept after it expired. */
export const EVIDENCE_KEPT_MS = 7 * 24 * 3600 * 1000;

/** How many of a client's instances are searched for the previous report of the reporting one. */
const PREVIOUS_REPORTS = 50;

/**
 * Tool refusals counted since the previous report of the same instance (a new instance, or one
 * whose report was forgotten, counts from zero), as `<tool> <reason> <n>` lines, sorted.
 */
export function newToolRefusals(
  before: Record<string, Record<string, number>> | undefined,
  after: Record<string, Record<string, number>> | undefined,
): { total: number; lines: string[] } {
  const lines: string[] = [];
  let total = 0;
  for (const [tool, reasons] of Object.entries(after ?? {})) {
    for (const [reason, n] of Object.entries(reasons)) {
      const seen =
        before && Object.hasOwn(before, tool) && Object.hasOwn(before[tool]!, reason) ? before[tool]![reason]! : 0;
      // Totals only grow within an instance; a smaller number is a counter reset, counted from zero.
      const fresh = n >= seen ? n - seen : n;
      if (fresh === 0) continue;
      total += fresh;
      lines.push(`${tool} ${reason} ${fresh}`);
    }
  }
  return { total, lines: lines.sort() };
}

/**
 * Verifies a gateway instance's signed report for its (authenticated) client and stores it as
 * that instance's newest observation (docs/gateway.md#evidence).
 */
export async function acceptEvidence(
  services: Pick<ControlPlaneServices, 'config' | 'storage' | 'events' | 'now'>,
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
  await services.storage.transaction(async (tx) => {
    const previous = (await tx.gateway.listEvidence(client.clientId, PREVIOUS_REPORTS)).find(
      (report) => report.instance === verified.instance && report.startedAt === verified.startedAt,
    );
    if (!(await tx.gateway.recordEvidence({ ...verified, receivedAt: now, jws }))) return;
    // One receipt per report with new tool refusals (not one per refused call): the ledger
    // keeps that they happened, by tool and reason, without being flooded by a client's retries.
    const fresh = newToolRefusals(previous?.counts.tools, verified.counts.tools);
    if (fresh.total === 0) return;
    await services.events.record(tx, {
      type: 'gateway.refusals',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      instance: verified.instance,
      total: fresh.total,
      tools: fresh.lines,
    });
  });
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
