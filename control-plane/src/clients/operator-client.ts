import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hashClientSecret } from '#lib/oauth/client-auth.js';
import { clientTypeOf, validateClientMetadata } from '#lib/oauth/client-metadata.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { StoredClient } from '../storage/interface.js';

/**
 * A client that the operator's own process registers in-process (`keyplane up`'s gateway and its
 * in-place example), not through POST /register: it has no admin token to offer. Only the client
 * id is remembered, in a file of the data dir; a confidential client gets a fresh secret at every
 * start, so no plaintext secret ever sits on disk, and a public one is updated when its metadata
 * changed (a new port).
 */
export interface OperatorClientOptions {
  /** The file in the data dir that remembers the client id (mode 0600). */
  stateFile: string;
  /** Client metadata as POST /register would take it; validated here. */
  metadata: Record<string, unknown>;
  /** Said in the error when another writer changed the client while this start ran. */
  label: string;
}

export interface OperatorClient {
  clientId: string;
  /** The fresh secret of a confidential client; absent for a public one. */
  clientSecret?: string;
  /** True when this start registered it (a fresh data dir, or the remembered client was deleted). */
  created: boolean;
}

export async function ensureOperatorClient(
  services: Pick<ControlPlaneServices, 'storage' | 'events' | 'config' | 'now'>,
  options: OperatorClientOptions,
): Promise<OperatorClient> {
  const { storage, events } = services;
  const metadata = validateClientMetadata(options.metadata);
  const type = clientTypeOf(metadata.token_endpoint_auth_method);
  const secret = type === 'confidential' ? randomToken(32) : undefined;
  const secretHash = secret === undefined ? null : hashClientSecret(secret);
  const now = services.now();
  const stateFile = join(services.config.dataDir, options.stateFile);
  const remembered = await readRememberedId(stateFile);
  const existing = remembered ? await storage.clients.get(remembered) : null;

  if (existing) {
    const sameMetadata = JSON.stringify(existing.metadata) === JSON.stringify(metadata);
    if (secret !== undefined || !sameMetadata) {
      await storage.transaction(async (tx) => {
        const updated = await tx.clients.update(existing.clientId, existing.revision, {
          type,
          metadata,
          secretHash,
          secretIssuedAt: secret === undefined ? null : now,
          at: now,
        });
        if (!updated) throw new Error(`${options.label} changed while keyplane up was starting; start again`);
        await events.record(
          tx,
          secret !== undefined
            ? {
                type: 'client.secret_rotated',
                at: now,
                outcome: 'success',
                actor: { type: 'system' },
                clientId: existing.clientId,
                revision: updated.revision,
              }
            : {
                type: 'client.updated',
                at: now,
                outcome: 'success',
                actor: { type: 'system' },
                clientId: existing.clientId,
                revision: updated.revision,
                secretIssued: false,
              },
        );
      });
    }
    return { clientId: existing.clientId, ...(secret !== undefined ? { clientSecret: secret } : {}), created: false };
  }

  const client: StoredClient = {
    clientId: randomId('cl'),
    type,
    metadata,
    secretHash,
    secretIssuedAt: secret === undefined ? null : now,
    ownerId: null,
    // No RFC 7592 management token: the operator's process manages this client itself at every start.
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
      // `keyplane up` registers its own clients at start: Keyplane acts, not a token holder.
      actor: { type: 'system' },
      clientId: client.clientId,
      ownerId: null,
      by: 'admin',
      revision: 1,
    });
  });
  await writeFile(`${stateFile}.tmp`, JSON.stringify({ clientId: client.clientId }) + '\n', { mode: 0o600 });
  await rename(`${stateFile}.tmp`, stateFile);
  return { clientId: client.clientId, ...(secret !== undefined ? { clientSecret: secret } : {}), created: true };
}

async function readRememberedId(file: string): Promise<string | null> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as { clientId?: unknown };
    return typeof parsed.clientId === 'string' ? parsed.clientId : null;
  } catch {
    return null;
  }
}
