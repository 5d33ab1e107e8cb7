import { fail } from '#lib/errors/keyplane-error.js';
import type { ClientMetadata } from '#lib/oauth/client-metadata.js';
import { checkMetadataAgainstProfile } from '#lib/profiles/constraints.js';
import type { TrustProfile } from '#lib/profiles/documents.js';
import { profileOfClient } from '../managed-gateways/issue-config.js';
import type { Stores } from '../storage/interface.js';

/** Refuses metadata outside the profile with every violation named (RFC 7591 §3.2.2 `error` alongside). */
export function refuseMetadataOutside(
  metadata: Pick<ClientMetadata, 'redirect_uris' | 'resources' | 'access'>,
  profile: TrustProfile,
): void {
  const violations = checkMetadataAgainstProfile(metadata, profile);
  if (violations.length === 0) return;
  const message = `outside the trust profile of ${profile.project}: ${violations.map((v) => v.message).join('; ')}`;
  throw fail('outside_trust_profile', message, {
    fields: {
      error: violations[0]!.field === 'redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata',
      error_description: message,
      violations,
    },
  });
}

/** A client registered for a project may change only within that project's newest profile. */
export async function refuseOutsideProfile(
  stores: Pick<Stores, 'rollout'>,
  clientId: string,
  metadata: ClientMetadata,
): Promise<void> {
  const profile = await profileOfClient(stores, clientId);
  if (profile) refuseMetadataOutside(metadata, profile);
}
