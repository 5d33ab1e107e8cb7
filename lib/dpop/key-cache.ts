import type { KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import { importPublicJwk } from '../crypto/jwt.js';
import { deepFreeze } from '../runtime/deep-freeze.js';
import { ExpiringCache } from '../runtime/expiring-cache.js';

/**
 * Imported DPoP proof keys and their RFC 7638 thumbprints, by the members that make the key.
 * A client signs every proof with the same key, and importing it (plus the thumbprint) costs
 * about as much as verifying the proof's signature; what is cached is derived from the public
 * key alone, so a hit can never accept what a miss would refuse.
 */
export class DpopKeyCache {
  readonly #keys: ExpiringCache<string, Promise<{ key: KeyObject; jkt: string }>>;
  readonly #headers: ExpiringCache<string, Readonly<Record<string, unknown>>>;

  constructor(limit: number) {
    this.#keys = new ExpiringCache(limit);
    this.#headers = new ExpiringCache(limit);
  }

  /**
   * A proof's JOSE header, parsed, by its encoded segment: all of a client's proofs carry the same
   * header (`typ`, `alg`, `jwk`), so each is parsed once. The same segment always parses to the
   * same object, and the caller checks it on every proof, so a hit accepts nothing a miss would not.
   */
  header(segment: string, parse: (segment: string) => Record<string, unknown>): Readonly<Record<string, unknown>> {
    const known = this.#headers.get(segment, 0);
    if (known) return known;
    const parsed = deepFreeze(parse(segment));
    this.#headers.set(segment, parsed, Infinity, 0);
    return parsed;
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
