import { fail, type KeyplaneError } from '../errors/keyplane-error.js';
import { DPOP_ALGORITHMS } from './verify-dpop-proof.js';
import type { DpopError } from './errors.js';

/**
 * Turns a refused proof into the answer RFC 9449 prescribes for where it was presented:
 * at a token endpoint 400 with `error` (§5, §8); at a resource 401 with a `WWW-Authenticate:
 * DPoP` challenge (§7.1, §9). A fresh `nonce`, when given, goes in `DPoP-Nonce`.
 */
export function dpopRefusal(error: DpopError, at: 'token' | 'resource', nonce?: string): KeyplaneError {
  const headers: Record<string, string> = {};
  if (nonce !== undefined) headers['dpop-nonce'] = nonce;
  if (at === 'resource') {
    headers['www-authenticate'] = dpopChallenge({ error: error.code, description: error.message });
    return fail(error.code, error.message, {
      status: 401,
      headers,
      fields: { error: error.code, error_description: error.message },
    });
  }
  return fail(error.code, error.message, {
    status: 400,
    headers,
    fields: { error: error.code, error_description: error.message },
  });
}

/** A `WWW-Authenticate: DPoP` challenge with the algorithms this server accepts (RFC 9449 §7.1). */
export function dpopChallenge(input: { error?: string; description?: string; algs?: readonly string[] } = {}): string {
  const parts = [`algs="${(input.algs ?? DPOP_ALGORITHMS).join(' ')}"`];
  if (input.error) parts.push(`error="${input.error}"`);
  if (input.description) parts.push(`error_description="${input.description.replace(/["\\]/g, '')}"`);
  return `DPoP ${parts.join(', ')}`;
}
