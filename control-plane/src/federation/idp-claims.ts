import type { StoredGrant, Stores } from '../storage/interface.js';

/**
 * The connection behind a grant's sign-in, for the `idp` and `idp_name` claims
 * (docs/federation.md#tokens): read only when the sign-in's `amr` says `fed`.
 */
export async function federatedIdp(
  storage: Pick<Stores, 'connections'>,
  grant: Pick<StoredGrant, 'amr' | 'sessionId'>,
): Promise<{ idp?: { id: string; name: string } }> {
  if (!grant.amr.includes('fed')) return {};
  const connectionId = await storage.connections.sessionConnection(grant.sessionId);
  const connection = connectionId === null ? null : await storage.connections.get(connectionId);
  return connection ? { idp: { id: connection.connectionId, name: connection.name } } : {};
}
