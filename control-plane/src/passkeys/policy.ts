import { fail, type KeyplaneError } from '#lib/errors/keyplane-error.js';
import { authenticatorNameOf, type AuthenticatorName } from '#lib/webauthn/authenticator-names.js';
import {
  judgePasskeyAtSignIn,
  judgePasskeyPolicy,
  readPasskeyPolicy,
  type AuthenticatorFacts,
  type PasskeyPolicy,
  type PolicyRefusal,
} from '#lib/webauthn/judge-passkey-policy.js';
import type { ControlPlaneServices } from '../context.js';
import { requireOwnerAtSensitive } from '../orgs/membership.js';
import type { OwnerRequest } from '../orgs/mail-domains.js';
import type { CredentialSummary, Identity, StoredPasskeyPolicy } from '../storage/interface.js';
import { METADATA_CHECKED_FORMATS } from './metadata.js';

/** An org's passkey policy applied to the accounts it manages (docs/passkeys.md#org-policy). */

export type PolicyServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'events' | 'metadata' | 'now'>;

const DAY_MS = 86_400_000;

/** The policy that governs an account: its managing org's, or none for a personal account. */
export async function policyFor(
  services: Pick<PolicyServices, 'storage'>,
  identity: Pick<Identity, 'managedBy'> | null,
): Promise<StoredPasskeyPolicy | null> {
  if (!identity?.managedBy) return null;
  return services.storage.orgs.passkeyPolicy(identity.managedBy);
}

/**
 * The authenticator a passkey list shows (docs/passkeys.md#authenticator-names): the community
 * list's name and icon, else the loaded FIDO metadata's description; null when neither knows it.
 */
export function authenticatorOf(
  services: Pick<PolicyServices, 'metadata'>,
  aaguid: string | null | undefined,
): AuthenticatorName | null {
  const listed = authenticatorNameOf(aaguid);
  if (listed) return listed;
  const description = services.metadata.entry(aaguid)?.description;
  return description ? { name: description } : null;
}

/** The name a refusal shows: the FIDO metadata's description, the community list's name, or the AAGUID. */
export function authenticatorLabel(services: Pick<PolicyServices, 'metadata'>, aaguid: string | null): string {
  return services.metadata.entry(aaguid)?.description ?? authenticatorNameOf(aaguid)?.name ?? aaguid ?? 'unknown';
}

function factsOf(
  services: Pick<PolicyServices, 'metadata'>,
  passkey: { aaguid?: string | null; attested?: boolean },
): AuthenticatorFacts {
  const aaguid = passkey.aaguid ?? null;
  return {
    aaguid,
    attested: passkey.attested === true,
    metadataStatus: services.metadata.entry(aaguid)?.refusal ?? null,
  };
}

/**
 * The refusal: the envelope names the authenticator and the rule, so that a page says both in its
 * person's language (`passkey_policy.why.*`); the message is the English sentence.
 */
function refusal(
  services: Pick<PolicyServices, 'metadata'>,
  aaguid: string | null,
  why: PolicyRefusal,
  explanation: string,
): KeyplaneError {
  const name = authenticatorLabel(services, aaguid);
  return fail('authenticator_not_allowed', `${name}: ${explanation}`, {
    fields: { authenticator: { aaguid, name }, why },
  });
}

/**
 * Whether a verified attestation can be taken as the authenticator's word: a certificate chain
 * (not self attestation) in a format SimpleWebAuthn checks against the BLOB's statement for that
 * AAGUID, which the loaded BLOB lists.
 */
export function isAttested(
  services: Pick<PolicyServices, 'metadata'>,
  verified: { aaguid: string; attestationFormat: string; attestationCertified: boolean },
): boolean {
  return (
    verified.attestationCertified &&
    METADATA_CHECKED_FORMATS.includes(verified.attestationFormat) &&
    services.metadata.entry(verified.aaguid) !== null
  );
}

/**
 * Every registration of a passkey to an existing account (added on the account page, offered after
 * a sign-in without one, or made through an org's enrolment link): whether its attestation counts,
 * judged by the account's org policy, refused with `authenticator_not_allowed` before anything is
 * stored. Answers `attested`, which the stored passkey keeps.
 */
export async function judgeNewPasskey(
  services: Pick<PolicyServices, 'storage' | 'metadata'>,
  identity: Pick<Identity, 'managedBy'> | null,
  verified: { aaguid: string; attestationFormat: string; attestationCertified: boolean },
): Promise<{ attested: boolean }> {
  const attested = isAttested(services, verified);
  checkRegistrationPolicy(services, await policyFor(services, identity), { aaguid: verified.aaguid, attested });
  return { attested };
}

/** At registration: throws `authenticator_not_allowed` when the account's org policy refuses the new passkey. */
export function checkRegistrationPolicy(
  services: Pick<PolicyServices, 'metadata'>,
  policy: PasskeyPolicy | null,
  passkey: { aaguid: string; attested: boolean },
): void {
  if (!policy) return;
  const judged = judgePasskeyPolicy(policy, factsOf(services, passkey));
  if (!judged.allowed) throw refusal(services, passkey.aaguid, judged.why, judged.explanation);
}

/**
 * At sign-in (and step-up): throws `authenticator_not_allowed` when the policy refuses the passkey
 * and its grace is over; answers the grace's end while it lasts.
 */
export async function checkSignInPolicy(
  services: Pick<PolicyServices, 'storage' | 'metadata' | 'now'>,
  credential: Pick<CredentialSummary, 'identityId' | 'aaguid' | 'attested' | 'createdAt'>,
): Promise<{ graceUntil?: number }> {
  const policy = await policyFor(services, await services.storage.identities.get(credential.identityId));
  if (!policy) return {};
  const judged = judgePasskeyAtSignIn(policy, policy, factsOf(services, credential), credential, services.now());
  if (!judged.allowed) throw refusal(services, credential.aaguid ?? null, judged.why, judged.explanation);
  return 'graceUntil' in judged ? { graceUntil: judged.graceUntil } : {};
}

/** A passkey the policy refuses, as the preview and the account page list it. */
export interface RefusedPasskey {
  identityId: string;
  username: string;
  credId: string;
  label: string;
  aaguid: string | null;
  authenticator: string;
  why: PolicyRefusal;
}

/** The org's managed accounts' passkeys that `policy` refuses (grace aside). */
async function refusedBy(services: Pick<PolicyServices, 'storage' | 'metadata'>, orgId: string, policy: PasskeyPolicy) {
  const refused: RefusedPasskey[] = [];
  let passkeys = 0;
  for (const identity of await services.storage.identities.listManaged(orgId)) {
    for (const c of await services.storage.credentials.listByIdentity(identity.identityId)) {
      passkeys += 1;
      const judged = judgePasskeyPolicy(policy, factsOf(services, c));
      if (!judged.allowed)
        refused.push({
          identityId: identity.identityId,
          username: identity.username,
          credId: c.credId,
          label: c.label,
          aaguid: c.aaguid ?? null,
          authenticator: authenticatorLabel(services, c.aaguid ?? null),
          why: judged.why,
        });
    }
  }
  return { passkeys, refused };
}

export interface PolicyInput {
  aaguids_allowed?: unknown;
  aaguids_denied?: unknown;
  attestation?: unknown;
  grace_days?: unknown;
}

function graceDaysOf(services: Pick<PolicyServices, 'config'>, input: PolicyInput): number {
  if (input.grace_days === undefined) return services.config.passkeys.policyGraceDays;
  if (
    typeof input.grace_days !== 'number' ||
    !Number.isInteger(input.grace_days) ||
    input.grace_days < 0 ||
    input.grace_days > 365
  )
    throw fail('invalid_request', 'grace_days must be a whole number of days from 0 to 365');
  return input.grace_days;
}

/** The answer of the preview and of the change: the policy, and what it refuses among existing passkeys. */
export interface PolicyView {
  aaguids_allowed: string[];
  aaguids_denied: string[];
  attestation: 'none' | 'required';
  /** How many of the org's managed accounts' passkeys exist, and how many the policy refuses. */
  passkeys: number;
  would_refuse: number;
  refused: RefusedPasskey[];
  grace_days: number;
  /** When set: since when it holds, and until when the refused passkeys still sign in. */
  effective_at?: string;
  grace_until?: string;
  /** Whether the FIDO metadata is loaded: without it no attestation verifies. */
  metadata: { loaded: boolean; no?: number; next_update?: string };
}

function viewOf(
  services: Pick<PolicyServices, 'metadata'>,
  policy: PasskeyPolicy,
  counted: { passkeys: number; refused: RefusedPasskey[] },
  graceDays: number,
  stored?: Pick<StoredPasskeyPolicy, 'effectiveAt' | 'graceUntil'>,
): PolicyView {
  const loaded = services.metadata.loaded;
  return {
    aaguids_allowed: policy.aaguidsAllowed,
    aaguids_denied: policy.aaguidsDenied,
    attestation: policy.attestation,
    passkeys: counted.passkeys,
    would_refuse: counted.refused.length,
    refused: counted.refused,
    grace_days: graceDays,
    ...(stored
      ? {
          effective_at: new Date(stored.effectiveAt).toISOString(),
          grace_until: new Date(stored.graceUntil).toISOString(),
        }
      : {}),
    metadata: loaded ? { loaded: true, no: loaded.no, next_update: loaded.nextUpdate } : { loaded: false },
  };
}

function requireOwner(who: Pick<OwnerRequest, 'membership'>): void {
  if (who.membership.role !== 'owner') throw fail('forbidden', 'this needs the owner role in the organization');
}

/** The org's policy as set (an empty one when never set), with what it refuses now (an owner). */
export async function showPasskeyPolicy(
  services: PolicyServices,
  who: Pick<OwnerRequest, 'membership'>,
): Promise<PolicyView> {
  requireOwner(who);
  const orgId = who.membership.org.orgId;
  const stored = await services.storage.orgs.passkeyPolicy(orgId);
  const policy = stored ?? readPasskeyPolicy({});
  const graceDays = stored
    ? Math.round((stored.graceUntil - stored.effectiveAt) / DAY_MS)
    : services.config.passkeys.policyGraceDays;
  return viewOf(services, policy, await refusedBy(services, orgId, policy), graceDays, stored ?? undefined);
}

/** What a policy would refuse, before it is set (an owner; nothing changes, so no step-up). */
export async function previewPasskeyPolicy(
  services: PolicyServices,
  who: OwnerRequest,
  input: PolicyInput,
): Promise<PolicyView> {
  requireOwner(who);
  const policy = readPasskeyPolicy(input);
  const graceDays = graceDaysOf(services, input);
  return viewOf(services, policy, await refusedBy(services, who.membership.org.orgId, policy), graceDays);
}

/**
 * Sets the org's policy (owner at `sensitive`): it holds at once for registrations; passkeys it
 * refuses that exist now keep signing in for `grace_days` (default `passkeys.policyGraceDays`).
 */
export async function setPasskeyPolicy(
  services: PolicyServices,
  who: OwnerRequest,
  input: PolicyInput,
): Promise<PolicyView & { receipt?: string }> {
  requireOwnerAtSensitive(who.membership, who.assurance);
  const policy = readPasskeyPolicy(input);
  const graceDays = graceDaysOf(services, input);
  const orgId = who.membership.org.orgId;
  const now = services.now();
  const stored: StoredPasskeyPolicy = {
    ...policy,
    orgId,
    effectiveAt: now,
    graceUntil: now + graceDays * DAY_MS,
    updatedBy: who.identityId,
  };
  const counted = await refusedBy(services, orgId, policy);
  const { receipt } = await services.storage.transaction(async (tx) => {
    await tx.orgs.putPasskeyPolicy(stored);
    return services.events.record(tx, {
      type: 'org.passkey_policy_set',
      at: now,
      outcome: 'success',
      actor: { type: 'person', id: who.identityId },
      orgId,
      attestation: policy.attestation,
      allowed: policy.aaguidsAllowed.length,
      denied: policy.aaguidsDenied.length,
      refused: counted.refused.length,
      graceUntil: stored.graceUntil,
    });
  });
  return { ...viewOf(services, policy, counted, graceDays, stored), ...(receipt ? { receipt } : {}) };
}

/** The account's passkeys its org's policy refuses, with the grace's end: the account page's re-enrolment prompt. */
export async function passkeysToReplace(
  services: Pick<PolicyServices, 'storage' | 'metadata' | 'now'>,
  identity: Pick<Identity, 'identityId' | 'managedBy'>,
): Promise<{
  graceUntil: number;
  passkeys: Array<{ credId: string; label: string; authenticator: string; why: PolicyRefusal }>;
} | null> {
  const policy = await policyFor(services, identity);
  if (!policy) return null;
  const passkeys = [];
  for (const c of await services.storage.credentials.listByIdentity(identity.identityId)) {
    const judged = judgePasskeyPolicy(policy, factsOf(services, c));
    if (!judged.allowed)
      passkeys.push({
        credId: c.credId,
        label: c.label,
        authenticator: authenticatorLabel(services, c.aaguid ?? null),
        why: judged.why,
      });
  }
  return passkeys.length ? { graceUntil: policy.graceUntil, passkeys } : null;
}
