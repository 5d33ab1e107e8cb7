import { fail } from '#lib/errors/keyplane-error.js';
import { rateLimited } from '#lib/errors/rate-limited.js';
import { requireSignInAllowed } from '../accounts/lifecycle.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import { issueEnrolmentIn, type EnrolmentBlock, type EnrolmentServices } from '../passkeys/enrolment.js';
import { requireManager, type Membership } from './membership.js';

/**
 * A new passkey enrolment link for a managed account (docs/scim.md#a-new-link): its first link
 * expired or went astray before a passkey was made. An admin or owner of the org that manages it
 * asks; the account's unused links are deleted in the same transaction (an old link then answers
 * `link_invalid`), and the new one is mailed as at provisioning.
 */

/** New links per account per hour: enough for a typo'd mailbox, too few to mail-bomb anyone. */
export const RESENDS_PER_HOUR = 3;

const WHY: Record<EnrolmentBlock | 'passkey_enrolled', string> = {
  passkey_enrolled: 'the account has a passkey already and signs in with it',
  no_verified_address: 'the account has no verified address to mail a link to',
  connection: "the account signs in through its organization's connection",
};

const unavailable = (why: keyof typeof WHY) => fail('enrolment_unavailable', WHY[why], { fields: { why } });

export async function resendEnrolment(
  services: EnrolmentServices & Pick<ControlPlaneServices, 'mailer'>,
  m: Membership,
  actor: Actor,
  identityId: string,
): Promise<{ expiresAt: string; receipt?: string }> {
  requireManager(m);
  const { storage } = services;
  const identity = await storage.identities.get(identityId);
  if (!identity || identity.managedBy !== m.org.orgId)
    throw fail('not_found', 'the organization manages no account with this id');
  await requireSignInAllowed(storage, identityId);
  if ((await storage.credentials.countByIdentity(identityId)) > 0) throw unavailable('passkey_enrolled');
  const { count, ttlMs } = await services.state.incrWithTtl(`enrol:resend:${identityId}`, 3_600_000);
  if (count > RESENDS_PER_HOUR) throw rateLimited(ttlMs, 'new links were sent to this account too often; wait');
  const sent = await storage.transaction(async (tx) => {
    const replaced = await tx.links.revokeEnrolments(identityId);
    const issued = await issueEnrolmentIn(services, tx, {
      identityId,
      org: m.org,
      actor,
      replaced,
      ...(identity.preferences['lang'] ? { language: identity.preferences['lang'] } : {}),
    });
    if (typeof issued === 'string') throw unavailable(issued);
    return issued;
  });
  services.mailer.enqueue(sent.mail);
  return { expiresAt: new Date(sent.expiresAt).toISOString(), ...(sent.receipt ? { receipt: sent.receipt } : {}) };
}
