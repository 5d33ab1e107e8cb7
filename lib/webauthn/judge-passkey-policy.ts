import { fail } from '../errors/keyplane-error.js';

/**
 * An org's passkey policy (docs/passkeys.md#org-policy) as data: which authenticators its managed
 * accounts may register and sign in with. `aaguidsAllowed` non-empty implies `attestation:
 * 'required'`, since an AAGUID without a verified attestation statement is only the authenticator's
 * claim.
 */
export interface PasskeyPolicy {
  aaguidsAllowed: string[];
  aaguidsDenied: string[];
  attestation: 'none' | 'required';
}

/** What is known of the authenticator behind a passkey. */
export interface AuthenticatorFacts {
  /** Lowercase AAGUID; null or all zeros when the authenticator named none. */
  aaguid: string | null;
  /** True when its attestation statement was verified against the metadata's trust anchors. */
  attested: boolean;
  /** What the FIDO metadata now says of this AAGUID: revoked, compromised, or nothing against it. */
  metadataStatus: 'revoked' | 'compromised' | null;
}

/** Why a policy refuses an authenticator; each has a sentence in every catalog (`passkey_policy.why.*`). */
export const POLICY_REFUSALS = ['revoked', 'compromised', 'denied', 'not_allowed', 'attestation_required'] as const;
export type PolicyRefusal = (typeof POLICY_REFUSALS)[number];

export type PolicyJudgement = { allowed: true } | { allowed: false; why: PolicyRefusal; explanation: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ZERO_AAGUID = '00000000-0000-0000-0000-000000000000';
/** More would be a list of every authenticator made; the FIDO metadata holds about 300 FIDO2 entries. */
export const POLICY_AAGUIDS_MAX = 500;

/** The explanation of each refusal in English (the envelope's `message`; pages show `passkey_policy.why.*`). */
const EXPLAIN: Record<PolicyRefusal, string> = {
  revoked: 'the FIDO metadata lists this authenticator as revoked',
  compromised: 'the FIDO metadata reports this authenticator compromised',
  denied: "the organization's policy denies this authenticator",
  not_allowed: "this authenticator is not on the organization's allowed list",
  attestation_required: "the organization's policy requires a verified attestation, and this authenticator gave none",
};

function aaguidList(input: unknown, field: string): string[] {
  if (input === undefined || input === null) return [];
  if (!Array.isArray(input) || input.length > POLICY_AAGUIDS_MAX)
    throw fail('invalid_request', `${field} must be a list of at most ${POLICY_AAGUIDS_MAX} AAGUIDs`);
  const out = new Set<string>();
  for (const item of input) {
    const aaguid = typeof item === 'string' ? item.trim().toLowerCase() : '';
    if (!UUID.test(aaguid))
      throw fail('invalid_request', `${field} holds ${JSON.stringify(item)}, which is not a UUID`);
    out.add(aaguid);
  }
  return [...out].sort();
}

/**
 * Reads a policy as `PUT /org/{slug}/passkey-policy` sends it (`aaguids_allowed`, `aaguids_denied`,
 * `attestation`); an AAGUID on both lists is refused as ambiguous.
 */
export function readPasskeyPolicy(input: {
  aaguids_allowed?: unknown;
  aaguids_denied?: unknown;
  attestation?: unknown;
}): PasskeyPolicy {
  const aaguidsAllowed = aaguidList(input.aaguids_allowed, 'aaguids_allowed');
  const aaguidsDenied = aaguidList(input.aaguids_denied, 'aaguids_denied');
  const both = aaguidsAllowed.find((a) => aaguidsDenied.includes(a));
  if (both) throw fail('invalid_request', `${both} is both allowed and denied`);
  if (input.attestation !== undefined && input.attestation !== 'none' && input.attestation !== 'required')
    throw fail('invalid_request', 'attestation must be "none" or "required"');
  const attestation = aaguidsAllowed.length > 0 || input.attestation === 'required' ? 'required' : 'none';
  return { aaguidsAllowed, aaguidsDenied, attestation };
}

/** True when the policy asks nothing (no lists, no attestation): the same as having none. */
export function isEmptyPolicy(policy: PasskeyPolicy): boolean {
  return !policy.aaguidsAllowed.length && !policy.aaguidsDenied.length && policy.attestation === 'none';
}

/** Whether the registration ceremony must ask the authenticator for its attestation (`direct`). */
export function policyWantsAttestation(policy: PasskeyPolicy | null): boolean {
  return policy !== null && policy.attestation === 'required';
}

/**
 * Judges one authenticator against a policy, the same way at registration and at sign-in: the
 * metadata's revocation first (no list can allow a compromised authenticator), then the denied
 * list, then the allowed list, then attestation. The explanation is the code's own words.
 */
export function judgePasskeyPolicy(policy: PasskeyPolicy, facts: AuthenticatorFacts): PolicyJudgement {
  const refuse = (why: PolicyRefusal): PolicyJudgement => ({ allowed: false, why, explanation: EXPLAIN[why] });
  const aaguid = facts.aaguid && facts.aaguid !== ZERO_AAGUID ? facts.aaguid.toLowerCase() : null;
  if (facts.metadataStatus) return refuse(facts.metadataStatus);
  if (aaguid && policy.aaguidsDenied.includes(aaguid)) return refuse('denied');
  if (policy.aaguidsAllowed.length && (!aaguid || !policy.aaguidsAllowed.includes(aaguid)))
    return refuse('not_allowed');
  if (policy.attestation === 'required' && !facts.attested) return refuse('attestation_required');
  return { allowed: true };
}

/** When a policy took effect and how long passkeys registered before it keep working. */
export interface PolicyGrace {
  effectiveAt: number;
  graceUntil: number;
}

export type SignInJudgement = PolicyJudgement | { allowed: true; graceUntil: number; why: PolicyRefusal };

/**
 * At sign-in: a passkey registered before the policy took effect that the policy refuses still
 * works until the grace ends (the account page asks its owner to enrol another); one registered
 * since was judged at registration, so a refusal now (a later metadata report) holds at once.
 */
export function judgePasskeyAtSignIn(
  policy: PasskeyPolicy,
  grace: PolicyGrace,
  facts: AuthenticatorFacts,
  passkey: { createdAt: number },
  now: number,
): SignInJudgement {
  const judged = judgePasskeyPolicy(policy, facts);
  if (judged.allowed) return judged;
  if (passkey.createdAt < grace.effectiveAt && now < grace.graceUntil && !facts.metadataStatus)
    return { allowed: true, graceUntil: grace.graceUntil, why: judged.why };
  return judged;
}
