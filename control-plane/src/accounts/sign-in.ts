import { checkSignInPolicy } from '../passkeys/policy.js';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { checkUsername } from '#lib/accounts/username.js';
import { fail } from '#lib/errors/keyplane-error.js';
import type { ControlPlaneServices } from '../context.js';
import {
  CredentialLimits,
  readAssertion,
  requestOptions,
  takeChallenge,
  verifyAssertion,
} from '../passkeys/ceremony.js';
import { credentialsForUsername } from '../passkeys/decoy.js';
import { openSession, type OpenedSession, type SignInBrowser } from '../sessions/start-session.js';
import { PASSKEY_AMR } from './sign-up.js';

export type SignInServices = Pick<
  ControlPlaneServices,
  'config' | 'storage' | 'state' | 'events' | 'secrets' | 'metadata' | 'now'
>;

/**
 * Step 1 of a passkey sign-in: usernameless without `user`, or limited to that account's passkeys.
 * An unknown name gets the same shape, work and answer every time: decoy credential ids derived
 * from a keyed hash of the name, so this tells neither which usernames exist nor their credential
 * ids (docs/security.md "Account enumeration"); step 2 refuses. The per-IP limit is the caller's.
 */
export async function beginSignIn(
  services: SignInServices,
  user: string | undefined,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  if (user === undefined || user === '') return requestOptions(services, null, { purpose: 'signin' });
  const username = checkUsername(user);
  await new CredentialLimits(services).perAccount('signin-options', username);
  const { identityId, allow } = await credentialsForUsername(services, username);
  return requestOptions(services, allow, { purpose: 'signin', identityId });
}

export interface SignInFinish {
  /** Optional username; absent, null or empty means usernameless. */
  user?: unknown;
  /** The authenticator's assertion response (WebAuthn `PublicKeyCredential` as JSON). */
  response: unknown;
}

export interface SignedIn {
  identityId: string;
  session: OpenedSession;
}

/**
 * Step 2: consumes the challenge, checks that the passkey belongs to the named account (and to the
 * user handle it returned), verifies the signature, records the use and opens a session, all
 * refusals saying `unknown_credential` alike so the answer does not tell accounts apart.
 */
export async function finishSignIn(
  services: SignInServices,
  input: SignInFinish,
  browser: SignInBrowser,
): Promise<SignedIn> {
  const { storage } = services;
  const { id, clientData, fields, userHandle } = await readAssertion(input.response);
  const state = await takeChallenge(services, clientData, 'signin');
  const credential = await storage.credentials.get(id);
  if (!credential) throw fail('unknown_credential', 'this passkey is not registered here');
  if (state.identityId && state.identityId !== credential.identityId)
    throw fail('unknown_credential', 'this passkey does not belong to that account');
  if (input.user !== undefined && input.user !== null && input.user !== '') {
    const identity = await storage.identities.findByUsername(checkUsername(input.user));
    if (!identity || identity.identityId !== credential.identityId)
      throw fail('unknown_credential', 'this passkey does not belong to that account');
  }
  if (userHandle !== undefined && userHandle !== credential.identityId)
    throw fail('unknown_credential', 'this passkey does not belong to that account');
  await new CredentialLimits(services).perAccount('signin', credential.identityId);
  const use = await verifyAssertion(services, input.response, clientData, fields, credential);
  // The org's passkey policy, once the passkey proved itself (docs/passkeys.md#org-policy).
  await checkSignInPolicy(services, credential);
  const now = services.now();
  const session = await storage.transaction(async (tx) => {
    await tx.credentials.recordUse(credential.credId, { ...use, at: now });
    return openSession(services, tx, browser, {
      identityId: credential.identityId,
      assurance: 'passkey',
      amr: PASSKEY_AMR,
      credId: credential.credId,
    });
  });
  return { identityId: credential.identityId, session };
}
