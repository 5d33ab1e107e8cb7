import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hashClientSecret } from '../../../lib/oauth/client-auth.js';
import { clientTypeOf, validateClientMetadata } from '../../../lib/oauth/client-metadata.js';
import { randomId, randomToken } from '../../../lib/util/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/types.js';

/**
 * The in-place example page that `keyplane up` serves on its demo app (deploy/examples/in-place/)
 * is an ordinary public OIDC client with in-place sign-in on (docs/in-place.md#try-it). Like the
 * demo gateway it is registered in-process (`up` has no admin token to offer) and remembered by
 * id in the data dir; its redirect URIs follow the demo app's origins at every start.
 */

const STATE_FILE = 'up-in-place-client.json';
/** Where the example page lives on each origin; its registered redirect URI is `<origin>/in-place/callback`. */
export const IN_PLACE_DEMO_PATH = '/in-place/';

export interface InPlaceDemoClient {
  clientId: string;
  /** True when this start registered it (a fresh data dir). */
  created: boolean;
}

export async function ensureInPlaceDemoClient(
  services: ControlPlaneServices,
  options: { origins: readonly string[] },
): Promise<InPlaceDemoClient> {
  const { storage, events } = services;
  const metadata = validateClientMetadata({
    client_name: 'Keyplane in-place example',
    redirect_uris: options.origins.map((origin) => `${origin}${IN_PLACE_DEMO_PATH}callback`),
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'none',
    scope: 'openid email profile',
    in_place: true,
    // The operator's own example: a newcomer can sign up and sign in on the page at once, with
    // no approval page in between (the operator marks any app of their own first-party).
    first_party: true,
  });
  const now = services.now();
  const stateFile = join(services.config.dataDir, STATE_FILE);
  const remembered = await readRememberedId(stateFile);
  const existing = remembered ? await storage.clients.get(remembered) : null;
  if (existing) {
    const same = JSON.stringify(existing.metadata.redirect_uris) === JSON.stringify(metadata.redirect_uris);
    if (!same) {
      await storage.transaction(async (tx) => {
        const updated = await tx.clients.update(existing.clientId, existing.revision, {
          type: clientTypeOf(metadata.token_endpoint_auth_method),
          metadata,
          secretHash: null,
          secretIssuedAt: null,
          at: now,
        });
        if (!updated)
          throw new Error('the in-place example client changed while keyplane up was starting; start again');
        await events.record(tx, {
          type: 'client.updated',
          at: now,
          outcome: 'success',
          clientId: existing.clientId,
          revision: updated.revision,
          secretIssued: false,
        });
      });
    }
    return { clientId: existing.clientId, created: false };
  }
  const client: StoredClient = {
    clientId: randomId('cl'),
    type: clientTypeOf(metadata.token_endpoint_auth_method),
    metadata,
    secretHash: null,
    secretIssuedAt: null,
    ownerId: null,
    // No RFC 7592 management token: `up` manages this client itself at every start.
    registrationTokenHash: hashClientSecret(randomToken(32)),
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
  await storage.transaction(async (tx) => {
    await tx.clients.insert(client);
    await events.record(tx, {
      type: 'client.registered',
      at: now,
      outcome: 'success',
      clientId: client.clientId,
      ownerId: null,
      by: 'admin',
      revision: 1,
    });
  });
  await writeFile(`${stateFile}.tmp`, JSON.stringify({ clientId: client.clientId }) + '\n', { mode: 0o600 });
  await rename(`${stateFile}.tmp`, stateFile);
  return { clientId: client.clientId, created: true };
}

async function readRememberedId(file: string): Promise<string | null> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as { clientId?: unknown };
    return typeof parsed.clientId === 'string' ? parsed.clientId : null;
  } catch {
    return null;
  }
}
