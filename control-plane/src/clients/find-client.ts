import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

/** Longer than any id this server issues: such a value is never looked up. */
const CLIENT_ID_MAX = 100;

/** The registered client with this id, or null (an over-long id is not looked up). */
export async function findClient(
  services: Pick<ControlPlaneServices, 'storage'>,
  clientId: string,
): Promise<StoredClient | null> {
  return clientId.length <= CLIENT_ID_MAX ? services.storage.clients.get(clientId) : null;
}

/** One page of all clients in id order, after `after` (the operator's listing). */
export async function listClients(
  services: Pick<ControlPlaneServices, 'storage'>,
  after: string | null,
  limit: number,
): Promise<StoredClient[]> {
  return services.storage.clients.list(after, limit);
}
