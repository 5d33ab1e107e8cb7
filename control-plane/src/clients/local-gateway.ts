import { readFile, writeFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { hashClientSecret } from '../../../lib/oauth/client-auth.js';
import { clientTypeOf, validateClientMetadata, type GatewayPolicy } from '../../../lib/oauth/client-metadata.js';
import { randomId, randomToken } from '../../../lib/util/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/types.js';

/** The demo's routes, as the gateway enforces them (the policy registered for the demo gateway client). */
export const DEMO_POLICY: GatewayPolicy = {
  mode: 'enforce',
  routes: [
    { path: '/', min_assurance: 'passkey' },
    { path: '/admin', min_assurance: 'sensitive', principals: ['human'] },
    { path: '/public', public: true },
    { path: '/favicon.ico', public: true },
    { path: '/favicon.svg', public: true },
  ],
};

/**
 * The gateway that `keyplane up` runs is an ordinary OIDC client of the control plane. It is
 * registered in-process rather than through POST /register because `up` has no admin token to
 * offer, and it gets a fresh secret at every start: only the client id is remembered (in the data
 * dir), so no plaintext secret ever sits on disk.
 */

const STATE_FILE = 'up-gateway-client.json';

export interface LocalGatewayClient {
  clientId: string;
  clientSecret: string;
  /** True when this start registered it (a fresh data dir). */
  created: boolean;
}

export interface LocalGatewayOptions {
  /** The gateway's public URL: its redirect URI is `<url>/_gate/callback`, its post-logout URI `<url>/`. */
  gatewayUrl: string;
  policy: GatewayPolicy;
  clientName?: string;
}

export async function ensureLocalGatewayClient(
  services: ControlPlaneServices,
  options: LocalGatewayOptions,
): Promise<LocalGatewayClient> {
  const { storage, events } = services;
  const metadata = validateClientMetadata({
    client_name: options.clientName ?? 'Keyplane demo gateway',
    redirect_uris: [`${options.gatewayUrl}/_gate/callback`],
    post_logout_redirect_uris: [`${options.gatewayUrl}/`],
    grant_types: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: 'client_secret_basic',
    scope: 'openid email offline_access',
    resources: [options.gatewayUrl],
    access: { humans: true, agents: true },
    gateway: options.policy,
    // The operator's own demo: no approval page, as an operator marks any first-party app.
    first_party: true,
  });
  const secret = randomToken(32);
  const secretHash = hashClientSecret(secret);
  const now = services.now();
  const stateFile = join(services.config.dataDir, STATE_FILE);
  const remembered = await readRememberedId(stateFile);
  const existing = remembered ? await storage.clients.get(remembered) : null;

  if (existing) {
    await storage.transaction(async (tx) => {
      const updated = await tx.clients.update(existing.clientId, existing.revision, {
        type: clientTypeOf(metadata.token_endpoint_auth_method),
        metadata,
        secretHash,
        secretIssuedAt: now,
        at: now,
      });
      if (!updated) throw new Error('the demo gateway client changed while keyplane up was starting; start again');
      await events.record(tx, {
        type: 'client.secret_rotated',
        at: now,
        outcome: 'success',
        clientId: existing.clientId,
        revision: updated.revision,
      });
    });
    return { clientId: existing.clientId, clientSecret: secret, created: false };
  }

  const client: StoredClient = {
    clientId: randomId('cl'),
    type: clientTypeOf(metadata.token_endpoint_auth_method),
    metadata,
    secretHash,
    secretIssuedAt: now,
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
  return { clientId: client.clientId, clientSecret: secret, created: true };
}

async function readRememberedId(file: string): Promise<string | null> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as { clientId?: unknown };
    return typeof parsed.clientId === 'string' ? parsed.clientId : null;
  } catch {
    return null;
  }
}
