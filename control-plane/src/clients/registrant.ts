import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

/**
 * Who registered a client, as an approval page names them (docs/security.md#the-device-approval-page):
 * the operator, an org (by name and slug) or an account (by username). Only a client the operator
 * marked first-party is vouched for; every other name and `client_uri` is what its registrant typed.
 */
export interface Registrant {
  /** `null` for the operator of this installation. */
  name: string | null;
  vouched: boolean;
}

export async function registrantOf(
  services: Pick<ControlPlaneServices, 'storage'>,
  client: StoredClient,
): Promise<Registrant> {
  const vouched = client.ownerId === null && client.metadata.first_party === true;
  if (client.ownerId === null) return { name: null, vouched };
  const org = await services.storage.orgs.get(client.ownerId);
  if (org) return { name: `${org.name} (${org.slug})`, vouched };
  const identity = await services.storage.identities.get(client.ownerId);
  return { name: identity?.username ?? client.ownerId, vouched };
}
