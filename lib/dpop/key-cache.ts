import type { KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { importPublicJwk } from '../crypto/jwt.js';
import { ExpiringCache } from '../runtime/expiring-cache.js';

/**
 * Imported DPoP proof keys and their RFC 7638 thumbprints, by the members that make the key.
 * A client signs every proof with the same key, and importing it (plus the thumbprint) costs
 * about as much as verifying the proof's signature; what is cached is derived from the public
 * key alone, so a hit can never accept what a miss would refuse.
 */
export class DpopKeyCache {
  readonly #keys: ExpiringCache<string, Promise<{ key: KeyObject; jkt: string }>>;

  constructor(limit: number) {
    this.#keys = new ExpiringCache(limit);
  }

  resolve(jwk: JWK, alg: string): Promise<{ key: KeyObject; jkt: string }> {
    const id = JSON.stringify([alg, jwk.kty, jwk.crv, jwk.x, jwk.y]);
    const known = this.#keys.get(id, 0);
    if (known) return known;
    const imported = Promise.all([
      Promise.resolve().then(() => importPublicJwk(jwk as Record<string, unknown>)),
      calculateJwkThumbprint(jwk, 'sha256'),
    ]).then(([key, jkt]) => ({ key, jkt }));
    this.#keys.set(id, imported, Infinity, 0);
    // A key that does not import is not remembered.
    imported.catch(() => this.#keys.delete(id));
    return imported;
  }
}
