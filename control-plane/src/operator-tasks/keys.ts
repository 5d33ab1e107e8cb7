import type { ControlPlaneConfig } from '#config/types.js';
import { KeyRing, serverRotationPolicy } from '../keys/key-ring.js';
import { assertMasterKeyOpens, resolveMasterKey } from '../keys/master-key.js';
import { openOfflineServices } from '../services.js';

/** A published key and whether it signs now. */
export interface KeyListing {
  kid: string;
  current: boolean;
}

/** Opens the ring as the server does (same master key, same retention) for one task, then closes it. */
async function withRing<T>(config: ControlPlaneConfig, work: (ring: KeyRing) => Promise<T>): Promise<T> {
  const offline = await openOfflineServices(config);
  try {
    const master = resolveMasterKey(config.masterKey, config.dataDir);
    assertMasterKeyOpens(master, await offline.storage.keys.list());
    const ring = new KeyRing(offline.storage, master.key, serverRotationPolicy(config));
    await ring.ensure();
    return await work(ring);
  } finally {
    await offline.close();
  }
}

/** `keyplane keys rotate`: the next key starts signing, the current one retires, a new next key is published. */
export function rotateSigningKeys(
  config: ControlPlaneConfig,
): Promise<{ retired: string | null; current: string; next: string }> {
  return withRing(config, (ring) => ring.rotate());
}

/** `keyplane keys list`: the published keys, newest first. */
export function listSigningKeys(config: ControlPlaneConfig): Promise<KeyListing[]> {
  return withRing(config, async (ring) => {
    const current = ring.current().kid;
    return ring.jwks().keys.map((key) => ({ kid: key.kid, current: key.kid === current }));
  });
}
