import type {
  AuthenticationResponseJSON,
  AuthenticatorTransport,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { fail } from '#lib/errors/keyplane-error.js';
import { enforceLimit, retryAfterSeconds } from '#lib/errors/rate-limited.js';
import { RateLimiter } from '#lib/runtime/security/rate-limiter.js';
import type { ClientData } from '#lib/webauthn/check-ceremony.js';
import type { ControlPlaneServices } from '../context.js';
import type { CredentialSummary, StoredCredential } from '../storage/interface.js';

/**
 * The WebAuthn ceremonies as the routes use them: options with a one-use challenge kept in shared
 * state, and verification that names each failure. Passkeys are discoverable credentials with user
 * verification required; the algorithms are pinned so that the options do not change with the
 * Node runtime (SimpleWebAuthn 14 adds ML-DSA where WebCrypto has it).
 */
export const SUPPORTED_ALGORITHM_IDS = [-8, -7, -257]; // EdDSA, ES256, RS256
export const RP_NAME = 'Keyplane';

/** What the ceremonies read: the issuer and lifetimes from the config, challenges in shared state. */
export type CeremonyServices = Pick<ControlPlaneServices, 'config' | 'state'>;

/** RP ID: the issuer's host name. */
export function rpIdOf(services: Pick<CeremonyServices, 'config'>): string {
  return new URL(services.config.issuer).hostname;
}

/** Origins a response may come from on the issuer's own pages (the direct grant passes the RP's origin instead). */
export function expectedOriginsOf(services: CeremonyServices): string[] {
  return [new URL(services.config.issuer).origin];
}

export type ChallengePurpose = 'signin' | 'add' | 'step-up' | 'direct' | 'console' | 'enrol' | 'link';

export interface ChallengeState {
  purpose: ChallengePurpose;
  /** For `add` and `step-up`, and for sign-in with a username: whose passkey must answer. */
  identityId?: string;
  /** For `add` and `step-up`: the session that asked. */
  sessionId?: string;
  /** For `direct`: the client and the exact relying-party origin the ceremony runs on. */
  clientId?: string;
  origin?: string;
  /** For `enrol`: the hash of the enrolment link the ceremony was started from; for `link`, of the held link id. */
  link?: string;
}

/**
 * SimpleWebAuthn and our checks on its helpers, loaded by the first ceremony: with the
 * @peculiar/x509 and ASN.1 modules they bring, they cost about 0.3 s of CPU to load, which every
 * process that built the app paid (each test file too), ceremony or not (docs/platform.md#test-tiers).
 */
let loaded:
  | Promise<
      typeof import('@simplewebauthn/server') &
        typeof import('#lib/webauthn/check-ceremony.js') & {
          isoBase64URL: typeof import('@simplewebauthn/server/helpers').isoBase64URL;
          decodeAttestationObject: typeof import('@simplewebauthn/server/helpers').decodeAttestationObject;
        }
    >
  | undefined;
function webauthn() {
  loaded ??= Promise.all([
    import('@simplewebauthn/server'),
    import('@simplewebauthn/server/helpers'),
    import('#lib/webauthn/check-ceremony.js'),
  ]).then(([server, helpers, checks]) => ({
    ...server,
    ...checks,
    isoBase64URL: helpers.isoBase64URL,
    decodeAttestationObject: helpers.decodeAttestationObject,
  }));
  return loaded;
}

const challengeKey = (challenge: string) => `webauthn:challenge:${challenge}`;

function challengeTtlMs(services: CeremonyServices): number {
  return services.config.lifetimes.challenge * 1000;
}

async function storeChallenge(services: CeremonyServices, challenge: string, state: ChallengeState): Promise<void> {
  const stored = await services.state.setIfAbsent(
    challengeKey(challenge),
    JSON.stringify(state),
    challengeTtlMs(services),
  );
  if (!stored) throw fail('internal', 'challenge collision');
}

/** Consumes the challenge the response answers; `challenge_unknown` when it is unknown, expired or used. */
export async function takeChallenge(
  services: CeremonyServices,
  clientData: ClientData,
  purpose: ChallengePurpose,
): Promise<ChallengeState> {
  const raw = await services.state.take(challengeKey(clientData.challenge));
  if (raw === null) throw fail('challenge_unknown', 'this sign-in attempt expired or was already used; start again');
  const state = JSON.parse(raw) as ChallengeState;
  if (state.purpose !== purpose) throw fail('challenge_mismatch', 'the response answers a different ceremony');
  return state;
}

function descriptors(credentials: CredentialSummary[]) {
  return credentials.map((c) => ({ id: c.credId, transports: c.transports as AuthenticatorTransport[] }));
}

/** The bytes of the WebAuthn user handle: the identity id. */
export function userHandleOf(identityId: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(identityId, 'utf8'));
}

/**
 * `attestation: 'direct'` only for an account whose org's policy requires a verified attestation
 * (docs/passkeys.md#org-policy); everyone else is asked for none, which keeps the prompt plain.
 */
export async function creationOptions(
  services: CeremonyServices,
  user: { identityId: string; username: string; displayName: string },
  existing: CredentialSummary[],
  attestation: 'none' | 'direct' = 'none',
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const { generateRegistrationOptions } = await webauthn();
  return generateRegistrationOptions({
    rpName: RP_NAME,
    rpID: rpIdOf(services),
    userName: user.username,
    userID: userHandleOf(user.identityId),
    userDisplayName: user.displayName || user.username,
    timeout: challengeTtlMs(services),
    attestationType: attestation,
    excludeCredentials: descriptors(existing),
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
    supportedAlgorithmIDs: SUPPORTED_ALGORITHM_IDS,
  });
}

/** Creation options whose challenge is stored for `add` (sign-up keeps its own state under the signup token). */
export async function creationOptionsFor(
  services: CeremonyServices,
  user: { identityId: string; username: string; displayName: string },
  existing: CredentialSummary[],
  state: ChallengeState,
  attestation: 'none' | 'direct' = 'none',
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const options = await creationOptions(services, user, existing, attestation);
  await storeChallenge(services, options.challenge, state);
  return options;
}

export async function requestOptions(
  services: CeremonyServices,
  allow: CredentialSummary[] | null,
  state: ChallengeState,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const { generateAuthenticationOptions } = await webauthn();
  const options = await generateAuthenticationOptions({
    rpID: rpIdOf(services),
    userVerification: 'required',
    timeout: challengeTtlMs(services),
    ...(allow ? { allowCredentials: descriptors(allow) } : {}),
  });
  await storeChallenge(services, options.challenge, state);
  return options;
}

export interface VerifiedRegistration {
  credId: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  backupEligible: boolean;
  backedUp: boolean;
  /** The authenticator's AAGUID, lowercase (all zeros when it names none). */
  aaguid: string;
  /** The attestation statement's format (`none` unless the options asked for `direct`). */
  attestationFormat: string;
  /** True when the statement carries a certificate chain (x5c), as opposed to none or self attestation. */
  attestationCertified: boolean;
}

/** Verifies an attestation (registration) response against `expectedChallenge`. */
export async function verifyRegistration(
  services: CeremonyServices,
  response: unknown,
  clientData: ClientData,
  fields: Record<string, unknown>,
  expectedChallenge: string,
  origins: string[] = expectedOriginsOf(services),
): Promise<VerifiedRegistration> {
  const { checkAttestation, checkOrigin, decodeAttestationObject, verifyRegistrationResponse } = await webauthn();
  if (clientData.challenge !== expectedChallenge)
    throw fail('challenge_mismatch', 'the response answers a different challenge');
  checkOrigin(clientData, origins);
  const facts = checkAttestation(fields, rpIdOf(services));
  if (facts.credentialId !== (response as { id?: unknown }).id)
    throw fail('webauthn_malformed', 'response.id is not the attested credential id');
  let result: Awaited<ReturnType<typeof import('@simplewebauthn/server').verifyRegistrationResponse>>;
  try {
    result = await verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      expectedChallenge,
      expectedOrigin: origins,
      expectedRPID: rpIdOf(services),
      requireUserVerification: true,
      supportedAlgorithmIDs: SUPPORTED_ALGORITHM_IDS,
    });
  } catch (error) {
    throw fail('webauthn_verification_failed', 'the passkey could not be verified', { cause: error });
  }
  if (!result.verified) throw fail('webauthn_verification_failed', 'the passkey could not be verified');
  const { credential, fmt, attestationObject } = result.registrationInfo;
  const x5c = decodeAttestationObject(attestationObject).get('attStmt').get('x5c');
  return {
    credId: credential.id,
    publicKey: credential.publicKey,
    counter: credential.counter,
    transports: (credential.transports ?? []).slice(0, 8).map(String),
    backupEligible: facts.backupEligible,
    backedUp: result.registrationInfo.credentialBackedUp,
    aaguid: result.registrationInfo.aaguid.toLowerCase(),
    attestationFormat: fmt,
    attestationCertified: fmt !== 'none' && Array.isArray(x5c) && x5c.length > 0,
  };
}

/** Reads a registration response's credential id and client data (shape-checked). */
export async function readRegistration(response: unknown) {
  const { readCredentialResponse } = await webauthn();
  return readCredentialResponse(response, 'webauthn.create');
}

export async function readAssertion(response: unknown) {
  const { isoBase64URL, readCredentialResponse } = await webauthn();
  const read = readCredentialResponse(response, 'webauthn.get');
  const handle = read.fields['userHandle'];
  let userHandle: string | undefined;
  if (handle !== undefined && handle !== null && handle !== '') {
    if (typeof handle !== 'string') throw fail('webauthn_malformed', 'userHandle must be base64url');
    try {
      userHandle = Buffer.from(isoBase64URL.toBuffer(handle)).toString('utf8');
    } catch {
      throw fail('webauthn_malformed', 'userHandle must be base64url');
    }
  }
  return { ...read, userHandle };
}

/** Verifies an assertion by `credential` (already looked up and matched to the account). */
export async function verifyAssertion(
  services: CeremonyServices,
  response: unknown,
  clientData: ClientData,
  fields: Record<string, unknown>,
  credential: StoredCredential,
  origins: string[] = expectedOriginsOf(services),
): Promise<{ counter: number; backedUp: boolean }> {
  const { checkAssertion, checkOrigin, verifyAuthenticationResponse } = await webauthn();
  checkOrigin(clientData, origins);
  const facts = checkAssertion(fields, rpIdOf(services), credential.counter);
  let result: Awaited<ReturnType<typeof import('@simplewebauthn/server').verifyAuthenticationResponse>>;
  try {
    result = await verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      expectedChallenge: clientData.challenge,
      expectedOrigin: origins,
      expectedRPID: rpIdOf(services),
      requireUserVerification: true,
      credential: {
        id: credential.credId,
        publicKey: new Uint8Array(credential.publicKey),
        counter: credential.counter,
        transports: credential.transports as AuthenticatorTransport[],
      },
    });
  } catch (error) {
    throw fail('webauthn_verification_failed', 'the passkey signature could not be verified', { cause: error });
  }
  if (!result.verified) throw fail('webauthn_verification_failed', 'the passkey signature could not be verified');
  return { counter: result.authenticationInfo.newCounter, backedUp: facts.backedUp };
}

/** Rate limits for credential paths: per client IP and per account (`limits.authPer…PerMinute`). */
export class CredentialLimits {
  private readonly limiter: RateLimiter;

  constructor(private readonly services: CeremonyServices) {
    this.limiter = new RateLimiter(services.state);
  }

  /** Per client IP (`request` is anything with the caller's address, such as a fastify request). */
  async perIp(request: { ip: string }, path: string): Promise<void> {
    await this.check(`${path}:ip`, request.ip, this.services.config.limits.authPerIpPerMinute);
  }

  async perAccount(path: string, account: string): Promise<void> {
    await this.check(`${path}:acct`, account, this.services.config.limits.authPerAccountPerMinute);
  }

  private async check(bucket: string, subject: string, max: number): Promise<void> {
    const decision = await this.limiter.hit(bucket, subject, { max, windowMs: 60_000 });
    enforceLimit(decision, `too many attempts; try again in ${retryAfterSeconds(decision.retryAfterMs)} s`);
  }
}
