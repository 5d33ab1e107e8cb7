import type { FastifyInstance } from 'fastify';
import type { ClientData } from '../../../../lib/webauthn/check-ceremony.js';
import * as ceremony from '../../passkeys/ceremony.js';
import type { CredentialSummary, StoredCredential } from '../../storage/types.js';

/**
 * The passkey ceremonies for route plugins that still hand over the fastify instance (the direct
 * grant and FedCM); everything else calls control-plane/src/passkeys/ceremony.ts with services.
 * Each adapter only reads `app.kp`; delete this file once those two call the services directly.
 */
export { readAssertion, readRegistration, type ChallengePurpose, type ChallengeState } from '../../passkeys/ceremony.js';

export class CredentialLimits extends ceremony.CredentialLimits {
  constructor(app: FastifyInstance) {
    super(app.kp);
  }
}

export const creationOptions = (app: FastifyInstance, user: { identityId: string; username: string; displayName: string }, existing: CredentialSummary[]) =>
  ceremony.creationOptions(app.kp, user, existing);

export const requestOptions = (app: FastifyInstance, allow: CredentialSummary[] | null, state: ceremony.ChallengeState) =>
  ceremony.requestOptions(app.kp, allow, state);

export const takeChallenge = (app: FastifyInstance, clientData: ClientData, purpose: ceremony.ChallengePurpose) =>
  ceremony.takeChallenge(app.kp, clientData, purpose);

export const verifyRegistration = (app: FastifyInstance, response: unknown, clientData: ClientData, fields: Record<string, unknown>, expectedChallenge: string, origins?: string[]) =>
  ceremony.verifyRegistration(app.kp, response, clientData, fields, expectedChallenge, origins);

export const verifyAssertion = (app: FastifyInstance, response: unknown, clientData: ClientData, fields: Record<string, unknown>, credential: StoredCredential, origins?: string[]) =>
  ceremony.verifyAssertion(app.kp, response, clientData, fields, credential, origins);
