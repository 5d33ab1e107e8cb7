import type { JWK } from 'jose';
import { fail } from '../errors/keyplane-error.js';

/** Members only a private or symmetric JWK has (RFC 7518 §6.2.2, §6.3.2, §6.4). */
export const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const;

export type AgentKeyAlgorithm = 'ES256' | 'EdDSA';

export interface CheckedAgentJwk {
  /** The public members only, in a fixed shape. */
  jwk: JWK;
  alg: AgentKeyAlgorithm;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

function coordinate(value: unknown, bytes: number, name: string): string {
  if (typeof value !== 'string' || !B64URL.test(value) || Buffer.from(value, 'base64url').length !== bytes) {
    throw fail('unsupported_key', `publicJwk.${name} must be ${bytes} bytes in base64url`);
  }
  return value;
}

/**
 * Checks an agent's public key: EC P-256 (proofs ES256) or OKP Ed25519 (proofs EdDSA). Any
 * private member is `private_key_material` (checked first, so a private key is never taken for
 * a merely malformed one); other curves and key types are `unsupported_key`.
 */
export function checkAgentJwk(input: unknown): CheckedAgentJwk {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw fail('unsupported_key', 'publicJwk must be a JWK object');
  const jwk = input as Record<string, unknown>;
  const present = PRIVATE_JWK_MEMBERS.filter((member) => member in jwk);
  if (present.length > 0) {
    throw fail(
      'private_key_material',
      `publicJwk carries private key material (${present.join(', ')}): send the public key only, the private key never leaves the agent`,
    );
  }
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') {
    return {
      alg: 'ES256',
      jwk: { kty: 'EC', crv: 'P-256', x: coordinate(jwk.x, 32, 'x'), y: coordinate(jwk.y, 32, 'y') },
    };
  }
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') {
    return { alg: 'EdDSA', jwk: { kty: 'OKP', crv: 'Ed25519', x: coordinate(jwk.x, 32, 'x') } };
  }
  throw fail('unsupported_key', 'publicJwk must be an EC P-256 or an OKP Ed25519 public key');
}
