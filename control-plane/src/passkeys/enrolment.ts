import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { fail } from '#lib/errors/keyplane-error.js';
import type { Reason } from '#lib/errors/reasons.js';
import { checkMagicLink, issueEnrolmentLink, type Redemption, type RedeemFailure } from '#lib/magic/magic-link.js';
import { defaultPasskeyLabel } from '#lib/webauthn/authenticator-names.js';
import { requireSignInAllowed } from '../accounts/lifecycle.js';
import { PASSKEY_AMR, credentialRecord } from '../accounts/sign-up.js';
import type { ControlPlaneServices } from '../context.js';
import type { Actor } from '../events/types.js';
import { enrolmentMail } from '../mail/templates.js';
import type { OutgoingMail } from '../mail/mailer.js';
import { mailLocale } from '../pages/ui.js';
import { openSession, type OpenedSession, type SignInBrowser } from '../sessions/start-session.js';
import type { Identity, Stores } from '../storage/interface.js';
import { policyWantsAttestation } from '#lib/webauthn/judge-passkey-policy.js';
import { creationOptionsFor, readRegistration, takeChallenge, verifyRegistration } from './ceremony.js';
import { judgeNewPasskey, policyFor } from './policy.js';

/**
 * Passkey enrolment links (docs/scim.md#enrolment-links): an account an org provisioned, with a
 * verified address and no connection of the org to sign in through, is mailed a link once, when
 * it is provisioned. The link opens a page where the person creates the account's passkey and is
 * signed in with it. It works once (one conditional update), for `ENROLMENT_LIFETIME_S`, in any
 * browser (the mail may be read anywhere), and never for a suspended or disabled account.
 */

/** Seven days: long enough for a new hire's first week, short enough that a forgotten mail goes stale. */
export const ENROLMENT_LIFETIME_S = 7 * 86_400;

export type EnrolmentServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'metadata' | 'now'
>;

const REFUSALS: Record<RedeemFailure, Reason> = {
  unknown: 'link_invalid',
  used: 'link_used',
  expired: 'link_expired',
  wrong_device: 'link_invalid',
};

/** Why an account gets no enrolment link: it signs in through its org's connection, or no address may be mailed. */
export type EnrolmentBlock = 'connection' | 'no_verified_address';

/**
 * Within a transaction: issues the account a link, or answers why it gets none. `replaced` (a
 * re-send) counts the unused links it replaces. The mail goes out once the transaction landed.
 */
export async function issueEnrolmentIn(
  services: Pick<EnrolmentServices, 'config' | 'events' | 'now'>,
  tx: Stores,
  input: {
    identityId: string;
    org: { orgId: string; name: string };
    actor: Actor;
    language?: string;
    replaced?: number;
  },
): Promise<{ mail: OutgoingMail; expiresAt: number; receipt?: string } | EnrolmentBlock> {
  // An org with a connection signs its accounts in there (docs/federation.md): no second way in.
  if ((await tx.connections.list(input.org.orgId)).length > 0) return 'connection';
  const emails = await tx.emails.listByIdentity(input.identityId);
  const target = emails.find((e) => e.verifiedAt !== null);
  if (!target) return 'no_verified_address';
  const now = services.now();
  const lifetimeMs = ENROLMENT_LIFETIME_S * 1000;
  const link = issueEnrolmentLink({
    endpoint: `${services.config.issuer}/auth/enrol`,
    identityId: input.identityId,
    emailId: target.emailId,
    now,
    lifetimeMs,
  });
  await tx.links.insertEnrolment(link.record);
  const { receipt } = await services.events.record(tx, {
    type: 'scim.enrolment_sent',
    at: now,
    outcome: 'success',
    actor: input.actor,
    orgId: input.org.orgId,
    identityId: input.identityId,
    emailId: target.emailId,
    ...(input.replaced !== undefined ? { resent: true as const, replaced: input.replaced } : {}),
  });
  const locale = mailLocale(input.language ? { lang: input.language } : undefined, services.config.i18n.defaultLocale);
  return {
    mail: enrolmentMail(target.email, link.url, input.org.name, ENROLMENT_LIFETIME_S, locale),
    expiresAt: now + lifetimeMs,
    ...(receipt ? { receipt } : {}),
  };
}

/**
 * Within the provisioning transaction: issues the link when the account should get one, and
 * answers the mail to send once the transaction has landed (null when none goes out).
 */
export async function issueEnrolmentFor(
  services: Pick<EnrolmentServices, 'config' | 'events' | 'now'>,
  tx: Stores,
  input: { identityId: string; org: { orgId: string; name: string }; actor: Actor; language?: string },
): Promise<OutgoingMail | null> {
  // The directory's `preferredLanguage` chooses the mail's language; the account has no preference yet.
  const issued = await issueEnrolmentIn(services, tx, input);
  return typeof issued === 'string' ? null : issued.mail;
}

/** What the enrolment page shows: the account and its org, once the link and the account both stand. */
export interface StandingEnrolment {
  identity: Identity;
  orgName: string;
  tokenHash: string;
  orgId: string;
}

/** Every check of the link and its account, without using the link up (the page is opened by GET). */
export async function checkEnrolment(services: EnrolmentServices, token: string): Promise<StandingEnrolment> {
  const checked: Redemption = await checkMagicLink(token, {
    purpose: 'enrol_passkey',
    now: services.now(),
    find: (hash) => services.storage.links.findEnrolment(hash),
  });
  if (!checked.ok) throw fail(REFUSALS[checked.why], 'this enrolment link cannot be used');
  const identity = await services.storage.identities.get(checked.record.identityId);
  if (!identity || identity.managedBy === undefined) throw fail('link_invalid', 'this link was never issued');
  await requireSignInAllowed(services.storage, identity.identityId);
  const org = await services.storage.orgs.get(identity.managedBy);
  if (!org) throw fail('link_invalid', 'this link was never issued');
  return { identity, orgName: org.name, orgId: org.orgId, tokenHash: checked.record.tokenHash };
}

/** Creation options for the account's passkey; the challenge is bound to this link. */
export async function beginEnrolment(
  services: EnrolmentServices,
  token: string,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const { identity, tokenHash } = await checkEnrolment(services, token);
  const existing = await services.storage.credentials.listByIdentity(identity.identityId);
  // The org's passkey policy holds for its enrolment links too (docs/passkeys.md#org-policy).
  const policy = await policyFor(services, identity);
  return creationOptionsFor(
    services,
    identity,
    existing,
    { purpose: 'enrol', identityId: identity.identityId, link: tokenHash },
    policyWantsAttestation(policy) ? 'direct' : 'none',
  );
}

/**
 * Verifies the passkey and, in one transaction, uses the link up (exactly one caller does), stores
 * the passkey and signs the browser in with it (`openSession` refuses a suspended account).
 */
export async function finishEnrolment(
  services: EnrolmentServices,
  input: { token: string; response: unknown },
  browser: SignInBrowser,
): Promise<{ identityId: string; session: OpenedSession; receipt?: string }> {
  const { identity, tokenHash, orgId } = await checkEnrolment(services, input.token);
  const { clientData, fields } = await readRegistration(input.response);
  const state = await takeChallenge(services, clientData, 'enrol');
  if (state.identityId !== identity.identityId || state.link !== tokenHash)
    throw fail('challenge_mismatch', 'this passkey was started from another link');
  const verified = await verifyRegistration(services, input.response, clientData, fields, clientData.challenge);
  // Judged before the link is used up: a refused authenticator leaves the link for another one.
  const { attested } = await judgeNewPasskey(services, identity, verified);
  const now = services.now();
  const { identityId } = identity;
  return services.storage.transaction(async (tx) => {
    if (!(await tx.links.consumeEnrolment(tokenHash, now))) throw fail('link_used', 'this link was used already');
    const count = await tx.credentials.countByIdentity(identityId);
    if (
      !(await tx.credentials.insert(
        credentialRecord(identityId, { ...verified, attested }, defaultPasskeyLabel(verified.aaguid, count + 1), now),
      ))
    )
      throw fail('credential_exists', 'this passkey is registered already');
    await services.events.record(tx, {
      type: 'passkey.added',
      at: now,
      outcome: 'success',
      identityId,
      credId: verified.credId,
    });
    const session = await openSession(services, tx, browser, {
      identityId,
      assurance: 'passkey',
      amr: PASSKEY_AMR,
      credId: verified.credId,
    });
    const { receipt } = await services.events.record(tx, {
      type: 'scim.enrolment_used',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: identityId },
      orgId,
      identityId,
      credId: verified.credId,
      sessionId: session.sessionId,
    });
    return { identityId, session, ...(receipt ? { receipt } : {}) };
  });
}
