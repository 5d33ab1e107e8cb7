import { createHmac } from 'node:crypto';
import { randomId } from '#lib/crypto/random.js';
import type { ControlPlaneServices } from '../context.js';
import type { CredentialSummary } from '../storage/interface.js';

/**
 * The passkeys a sign-in naming `username` may use: the account's own, or for a name no account
 * holds the decoy below, after the same look-ups. Every ceremony that takes a username
 * (`/auth/assertion-options`, the direct grant's options) answers through this, so neither tells
 * which usernames exist (docs/security.md#account-enumeration).
 */
export async function credentialsForUsername(
  services: Pick<ControlPlaneServices, 'storage' | 'secrets'>,
  username: string,
): Promise<{ identityId: string; allow: CredentialSummary[] }> {
  const identity = await services.storage.identities.findByUsername(username);
  const identityId = identity?.identityId ?? randomId('usr');
  const real = await services.storage.credentials.listByIdentity(identityId);
  const allow = identity ? real : decoyCredentials(services.secrets.macKey('assertion-decoy'), username);
  return { identityId, allow };
}

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
