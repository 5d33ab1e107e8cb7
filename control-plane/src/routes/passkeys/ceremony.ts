import type { ClientData } from '../../../../lib/webauthn/check-ceremony.js';
import type { ControlPlaneServices } from '../../context.js';
import * as ceremony from '../../passkeys/ceremony.js';
import type { CredentialSummary, StoredCredential } from '../../storage/types.js';

/** What the adapters read: the fastify instance, or services wrapped as `{ kp: services }`. */
export interface CeremonyHost {
  kp: Pick<ControlPlaneServices, 'config' | 'state'>;
}

/**
 * The passkey ceremonies for callers that still hand over a host (`app`, or `{ kp: services }`):
 * the direct grant and FedCM. Everything else calls control-plane/src/passkeys/ceremony.ts with
 * services; each adapter only unwraps `host.kp`. Delete this file once those two do the same.
 */
export {
  readAssertion, readRegistration, RP_NAME, SUPPORTED_ALGORITHM_IDS, userHandleOf,
  type ChallengePurpose, type ChallengeState, type VerifiedRegistration,
} from '../../passkeys/ceremony.js';

export class CredentialLimits extends ceremony.CredentialLimits {
  constructor(host: CeremonyHost) {
    super(host.kp);
  }
}

export const rpIdOf = (host: CeremonyHost) => ceremony.rpIdOf(host.kp);
export const expectedOriginsOf = (host: CeremonyHost) => ceremony.expectedOriginsOf(host.kp);

export const creationOptions = (host: CeremonyHost, user: { identityId: string; username: string; displayName: string }, existing: CredentialSummary[]) =>
  ceremony.creationOptions(host.kp, user, existing);

export const creationOptionsFor = (host: CeremonyHost, user: { identityId: string; username: string; displayName: string }, existing: CredentialSummary[], state: ceremony.ChallengeState) =>
  ceremony.creationOptionsFor(host.kp, user, existing, state);

export const requestOptions = (host: CeremonyHost, allow: CredentialSummary[] | null, state: ceremony.ChallengeState) =>
  ceremony.requestOptions(host.kp, allow, state);

export const takeChallenge = (host: CeremonyHost, clientData: ClientData, purpose: ceremony.ChallengePurpose) =>
  ceremony.takeChallenge(host.kp, clientData, purpose);

export const verifyRegistration = (host: CeremonyHost, response: unknown, clientData: ClientData, fields: Record<string, unknown>, expectedChallenge: string, origins?: string[]) =>
  ceremony.verifyRegistration(host.kp, response, clientData, fields, expectedChallenge, origins);

export const verifyAssertion = (host: CeremonyHost, response: unknown, clientData: ClientData, fields: Record<string, unknown>, credential: StoredCredential, origins?: string[]) =>
  ceremony.verifyAssertion(host.kp, response, clientData, fields, credential, origins);
