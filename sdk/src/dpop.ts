import { createHash, randomUUID } from 'node:crypto';
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';

/** A DPoP key pair (RFC 9449): the private key signs proofs, the public JWK travels in them. */
export interface DpopKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
}

/** A fresh, non-extractable ES256 key pair for DPoP. */
export async function generateDpopKey(): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const { kty, crv, x, y } = await exportJWK(publicKey);
  return { privateKey, publicJwk: { kty, crv, x, y } as JWK };
}

/** RFC 7638 thumbprint of the public key: the `dpop_jkt` and `cnf.jkt` value. */
export function dpopThumbprint(key: DpopKey): Promise<string> {
  return calculateJwkThumbprint(key.publicJwk, 'sha256');
}

/**
 * Signs proofs and remembers each server's latest `DPoP-Nonce` (RFC 9449 §8), so that after
 * the first `use_dpop_nonce` answer every later proof to that origin carries a fresh nonce.
 */
export class DpopSigner {
  private readonly nonces = new Map<string, string>();

  constructor(readonly key: DpopKey) {}

  async proof(method: string, url: string, accessToken?: string): Promise<string> {
    const target = new URL(url);
    // RFC 9449 §4.2: htu is the URI without query and fragment.
    const htu = `${target.origin}${target.pathname}`;
    const nonce = this.nonces.get(target.origin);
    const claims: Record<string, string | number> = {
      htm: method.toUpperCase(),
      htu,
      jti: randomUUID(),
      iat: Math.floor(Date.now() / 1000),
    };
    if (nonce) claims.nonce = nonce;
    if (accessToken) claims.ath = createHash('sha256').update(accessToken, 'ascii').digest('base64url');
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: this.key.publicJwk })
      .sign(this.key.privateKey);
  }

  /** Keeps the nonce a response offered; true when it is new (worth one retry). */
  remember(url: string, response: Response): boolean {
    const nonce = response.headers.get('dpop-nonce');
    if (!nonce) return false;
    const origin = new URL(url).origin;
    const changed = this.nonces.get(origin) !== nonce;
    this.nonces.set(origin, nonce);
    return changed;
  }
}
