import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { checkFreeText, checkUsername, DISPLAY_NAME_MAX } from '#lib/accounts/username.js';
import { fail } from '#lib/errors/keyplane-error.js';
import { defaultPasskeyLabel } from '#lib/webauthn/authenticator-names.js';
import { randomId, randomToken } from '#lib/crypto/random.js';
import { sha256Hex } from '#lib/crypto/sha256.js';
import type { ControlPlaneServices } from '../context.js';
import {
  CredentialLimits,
  creationOptions,
  readRegistration,
  verifyRegistration,
  type VerifiedRegistration,
} from '../passkeys/ceremony.js';
import { openSession, type OpenedSession, type SignInBrowser } from '../sessions/start-session.js';
import type { StoredCredential } from '../storage/interface.js';
import { checkSetupToken, consumeSetupToken } from './founder.js';

/** RFC 8176: proof of possession of a key, with the user verified by the authenticator. */
export const PASSKEY_AMR = ['pop', 'user'];

export type SignUpServices = Pick<ControlPlaneServices, 'config' | 'storage' | 'state' | 'events' | 'now'>;

interface SignupState {
  challenge: string;
  identityId: string;
  username: string;
  displayName: string;
  setupToken?: string;
}

const signupKey = (token: string) => `webauthn:signup:${sha256Hex(token)}`;

export interface SignUpStart {
  username: string;
  displayName?: string;
  /** From the founder setup link: this sign-up creates the founder account. */
  setupToken?: string;
}

/**
 * Step 1 of a passkey sign-up: checks the name (free, allowed, sign-up open or a setup token) and
 * returns creation options with a one-use signup token that carries the pending account in
 * shared state until step 2. Nothing is stored yet. The per-IP limit is the caller's.
 */
export async function beginSignUp(
  services: SignUpServices,
  input: SignUpStart,
): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; signupToken: string }> {
  const username = checkUsername(input.username);
  await new CredentialLimits(services).perAccount('signup', username);
  const displayName = checkFreeText(
    input.displayName ?? '',
    DISPLAY_NAME_MAX,
    'display_name_invalid',
    'the display name',
  );
  if (input.setupToken !== undefined) await checkSetupToken(services, input.setupToken);
  else if (!services.config.signup.selfService)
    throw fail('signup_closed', 'sign-up is closed on this server; ask its operator');
  if (await services.storage.identities.findByUsername(username))
    throw fail('username_taken', 'that username is taken');

  const identityId = randomId('usr');
  const options = await creationOptions(services, { identityId, username, displayName }, []);
  const signupToken = randomToken(32);
  const state: SignupState = {
    challenge: options.challenge,
    identityId,
    username,
    displayName,
    ...(input.setupToken ? { setupToken: input.setupToken } : {}),
  };
  if (
    !(await services.state.setIfAbsent(
      signupKey(signupToken),
      JSON.stringify(state),
      services.config.lifetimes.challenge * 1000,
    ))
  ) {
    throw fail('internal', 'signup token collision');
  }
  return { options, signupToken };
}

export interface SignUpFinish {
  /** The username step 1 was started for. */
  user: string;
  /** The authenticator's registration response (WebAuthn `PublicKeyCredential` as JSON). */
  response: unknown;
  signupToken: string;
}

export interface SignedUp {
  identityId: string;
  session: OpenedSession;
  /** The receipt of `account.created` (else of `session.started`), when the ledger is on. */
  receipt?: string;
}

/**
 * Step 2: consumes the signup token, verifies the registration and, in one transaction, creates
 * the account (the founder when step 1 carried a setup token) with its first passkey and signs
 * the browser in. A founder sign-up that fails puts its setup token back, so the link still works.
 */
export async function finishSignUp(
  services: SignUpServices,
  input: SignUpFinish,
  browser: SignInBrowser,
): Promise<SignedUp> {
  const raw = await services.state.take(signupKey(input.signupToken));
  if (raw === null) throw fail('challenge_unknown', 'this sign-up expired or was finished already; start again');
  const state = JSON.parse(raw) as SignupState;
  if (checkUsername(input.user) !== state.username)
    throw fail('challenge_mismatch', 'the sign-up was started for another username');
  await new CredentialLimits(services).perAccount('signup', state.username);
  const { clientData, fields } = await readRegistration(input.response);
  const verified = await verifyRegistration(services, input.response, clientData, fields, state.challenge);

  const restoreSetup = state.setupToken ? await consumeSetupToken(services, state.setupToken) : null;
  try {
    const now = services.now();
    return await services.storage.transaction(async (tx) => {
      const founder = restoreSetup !== null;
      if (founder && (await tx.identities.founderExists()))
        throw fail('invalid_setup_token', 'a founder account exists already');
      const created = await tx.identities.create({
        identityId: state.identityId,
        username: state.username,
        displayName: state.displayName,
        preferences: {},
        founder,
        createdAt: now,
        updatedAt: now,
      });
      if (!created) throw fail('username_taken', 'that username was taken in the meantime');
      if (
        !(await tx.credentials.insert(
          credentialRecord(state.identityId, verified, defaultPasskeyLabel(verified.aaguid, 1), now),
        ))
      ) {
        throw fail('credential_exists', 'this passkey is registered already');
      }
      // The founder is the instance's first operator (docs/console.md#who).
      if (founder)
        await tx.operators.grant({ identityId: state.identityId, role: 'operator', grantedAt: now, grantedBy: null });
      const account = await services.events.record(tx, {
        type: 'account.created',
        at: now,
        outcome: 'success',
        identityId: state.identityId,
        founder,
        credId: verified.credId,
      });
      const session = await openSession(services, tx, browser, {
        identityId: state.identityId,
        assurance: 'passkey',
        amr: PASSKEY_AMR,
        credId: verified.credId,
      });
      const receipt = account.receipt ?? session.receipt;
      return { identityId: state.identityId, session, ...(receipt ? { receipt } : {}) };
    });
  } catch (error) {
    await restoreSetup?.();
    throw error;
  }
}

/** The stored form of a verified passkey. */
export function credentialRecord(
  identityId: string,
  verified: Pick<
    VerifiedRegistration,
    'credId' | 'publicKey' | 'counter' | 'transports' | 'backupEligible' | 'backedUp' | 'aaguid'
  > & { attested?: boolean },
  label: string,
  now: number,
): StoredCredential {
  return {
    credId: verified.credId,
    identityId,
    publicKey: verified.publicKey,
    counter: verified.counter,
    transports: verified.transports,
    backupEligible: verified.backupEligible,
    backedUp: verified.backedUp,
    label,
    createdAt: now,
    lastUsedAt: null,
    aaguid: verified.aaguid,
    attested: verified.attested === true,
  };
}
