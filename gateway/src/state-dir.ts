import { constants, copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';

/** The files a gateway keeps in its state directory (docs/gateway.md#state-directory). */
export const STATE_FILES = ['gateway-config.json', 'gateway-signing-key.json', 'gateway-cookie.key'] as const;

/**
 * Before each gateway had a state directory of its own (`./data/gateways/<client id>` by default),
 * a gateway started without one kept its state in `./data`, shared with every other. On the first
 * start in the new directory, the old state is copied over when its saved config is this client's
 * (its `aud`), so the signing key the apps know and the cookie key of open sessions are kept;
 * another gateway's state is left where it is. Answers the files copied.
 */
export function adoptSharedState(from: string, to: string, clientId: string): string[] {
  if (STATE_FILES.some((name) => existsSync(join(to, name)))) return [];
  let audience: unknown;
  try {
    const saved = JSON.parse(readFileSync(join(from, 'gateway-config.json'), 'utf8')) as { jws?: unknown };
    audience = typeof saved.jws === 'string' ? decodeJwt(saved.jws).aud : undefined;
  } catch {
    return [];
  }
  if (audience !== clientId && !(Array.isArray(audience) && audience.includes(clientId))) return [];
  mkdirSync(to, { recursive: true, mode: 0o700 });
  const copied: string[] = [];
  for (const name of STATE_FILES) {
    if (!existsSync(join(from, name))) continue;
    copyFileSync(join(from, name), join(to, name), constants.COPYFILE_EXCL);
    copied.push(name);
  }
  return copied;
}
