import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JSONWebKeySet } from 'jose';
import type { ConfigStore } from '#lib/gateway-protocol/signed-config.js';

/** Keeps the last good signed config (with the JWKS that verified it) in the data dir. */
export function fileConfigStore(dataDir: string): ConfigStore {
  const path = join(dataDir, 'gateway-config.json');
  return {
    async load() {
      try {
        const parsed = JSON.parse(readFileSync(path, 'utf8')) as { jws?: unknown; jwks?: unknown };
        if (typeof parsed.jws !== 'string' || !parsed.jwks || typeof parsed.jwks !== 'object') return null;
        return { jws: parsed.jws, jwks: parsed.jwks as JSONWebKeySet };
      } catch {
        return null;
      }
    },
    async save(copy) {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      // Write then rename, so a crash never leaves half a file where the last good copy was.
      const temporary = `${path}.${process.pid}.tmp`;
      writeFileSync(temporary, JSON.stringify(copy), { mode: 0o600 });
      renameSync(temporary, path);
    },
  };
}
