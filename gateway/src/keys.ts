import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import type { CookieKey } from '#lib/gateway-protocol/session-cookie.js';

export interface GatewaySigningKey {
  kid: string;
  privateKey: KeyObject;
  publicJwk: JWK;
}

const KEY_FILE = 'gateway-signing-key.json';
const COOKIE_KEY_FILE = 'gateway-cookie.key';

function writeSecret(path: string, text: string): void {
  // `wx`: two processes starting on one data dir never overwrite each other's key.
  writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
}

/**
 * The gateway's own ES256 key, which signs `X-Auth-Assertion`. Kept as a private JWK in the
 * data dir (mode 0600) and made on first start; replicas that share the data dir share it.
 */
export async function loadOrCreateSigningKey(dataDir: string): Promise<GatewaySigningKey> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, KEY_FILE);
  if (!existsSync(path)) {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    try {
      writeSecret(path, JSON.stringify(privateKey.export({ format: 'jwk' })));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const privateKey = createPrivateKey({
    key: JSON.parse(readFileSync(path, 'utf8')) as JWK & { kty: string },
    format: 'jwk',
  });
  const { d: _d, ...pub } = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(pub);
  return { kid, privateKey, publicJwk: { ...pub, kid, alg: 'ES256', use: 'sig' } };
}

/** Cookie keys from config (newest first), else one generated in the data dir (mode 0600). */
export function loadCookieKeys(configured: readonly string[] | undefined, dataDir: string): CookieKey[] {
  if (configured && configured.length > 0) return configured.map((text) => ({ key: Buffer.from(text, 'base64url') }));
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, COOKIE_KEY_FILE);
  if (!existsSync(path)) {
    try {
      writeSecret(path, randomBytes(32).toString('base64url'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return [{ key: Buffer.from(readFileSync(path, 'utf8').trim(), 'base64url') }];
}
