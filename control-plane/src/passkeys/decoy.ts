import { createHmac } from 'node:crypto';
import type { CredentialSummary } from '../storage/types.js';

/**
 * Decoy `allowCredentials` for a username no account holds: one credential id of the common
 * passkey size (16 bytes, as platform authenticators mint them) from HMAC-SHA-256 of the name
 * under a key derived from the master key, so the same name always gets the same answer and
 * nobody without the key can tell it from a real one (the advice of SimpleWebAuthn and Kratos).
 */
export function decoyCredentials(key: Buffer, username: string): CredentialSummary[] {
  const credId = createHmac('sha256', key)
    .update(`keyplane:assertion-decoy:v1:${username}`)
    .digest()
    .subarray(0, 16)
    .toString('base64url');
  return [
    {
      credId,
      identityId: '',
      transports: ['hybrid', 'internal'],
      backupEligible: true,
      backedUp: true,
      label: '',
      createdAt: 0,
      lastUsedAt: null,
      counter: 0,
    },
  ];
}
