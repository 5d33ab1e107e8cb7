import { decodeAttestationObject, isoBase64URL, parseAuthenticatorData } from '@simplewebauthn/server/helpers';
import { fail } from '../errors/keyplane-error.js';
import { sha256 } from '../crypto/sha256.js';

/**
 * Checks made before a WebAuthn response reaches @simplewebauthn/server, so each failure gets its
 * own `reason` (the library reports every failure as a plain Error). The library then repeats
 * them and verifies the signature. WebAuthn L3 §7.1 (registration) and §7.2 (authentication).
 */

export type CeremonyType = 'webauthn.create' | 'webauthn.get';

export interface ClientData {
  type: CeremonyType;
  challenge: string;
  origin: string;
  crossOrigin: boolean;
  topOrigin?: string;
}

type Bytes = Parameters<typeof parseAuthenticatorData>[0];

const B64URL = /^[A-Za-z0-9_-]+={0,2}$/;

function decodeB64url(value: unknown, what: string): Bytes {
  if (typeof value !== 'string' || value.length === 0 || value.length > 65_536 || !B64URL.test(value)) {
    throw fail('webauthn_malformed', `${what} is not base64url`);
  }
  return isoBase64URL.toBuffer(value);
}

/** The pieces every response has: credential id and clientDataJSON, shape-checked. */
export function readCredentialResponse(
  response: unknown,
  type: CeremonyType,
): { id: string; clientData: ClientData; fields: Record<string, unknown> } {
  if (response === null || typeof response !== 'object')
    throw fail('webauthn_malformed', 'response must be a WebAuthn credential object');
  const r = response as Record<string, unknown>;
  if (r['type'] !== 'public-key') throw fail('webauthn_malformed', 'response.type must be "public-key"');
  if (typeof r['id'] !== 'string' || r['id'] !== r['rawId'])
    throw fail('webauthn_malformed', 'response.id and response.rawId must be the same base64url string');
  decodeB64url(r['id'], 'response.id');
  const inner = r['response'];
  if (inner === null || typeof inner !== 'object') throw fail('webauthn_malformed', 'response.response is missing');
  const fields = inner as Record<string, unknown>;
  const bytes = decodeB64url(fields['clientDataJSON'], 'clientDataJSON');
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw fail('webauthn_malformed', 'clientDataJSON is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object')
    throw fail('webauthn_malformed', 'clientDataJSON is not an object');
  if (parsed['type'] !== type) throw fail('webauthn_malformed', `clientDataJSON.type must be ${type}`);
  if (
    typeof parsed['challenge'] !== 'string' ||
    !B64URL.test(parsed['challenge']) ||
    typeof parsed['origin'] !== 'string'
  ) {
    throw fail('webauthn_malformed', 'clientDataJSON lacks challenge or origin');
  }
  const clientData: ClientData = {
    type,
    challenge: parsed['challenge'],
    origin: parsed['origin'],
    crossOrigin: parsed['crossOrigin'] === true,
    ...(typeof parsed['topOrigin'] === 'string' ? { topOrigin: parsed['topOrigin'] } : {}),
  };
  return { id: r['id'], clientData, fields };
}

/** The origin must be one of the expected origins (a list: FedCM and the direct grant add relying-party origins). */
export function checkOrigin(clientData: ClientData, expectedOrigins: readonly string[]): void {
  if (!expectedOrigins.includes(clientData.origin))
    throw fail('webauthn_origin_mismatch', 'the credential was used on another origin');
  if (clientData.crossOrigin || clientData.topOrigin !== undefined)
    throw fail('webauthn_origin_mismatch', 'cross-origin ceremonies are not accepted here');
}

export interface AuthenticatorDataFacts {
  counter: number;
  backupEligible: boolean;
  backedUp: boolean;
  credentialId?: string;
}

/** RP ID hash, user presence and user verification (required: passkeys are the whole sign-in). */
export function checkAuthenticatorData(authData: Bytes, rpId: string): AuthenticatorDataFacts {
  let parsed: ReturnType<typeof parseAuthenticatorData>;
  try {
    parsed = parseAuthenticatorData(authData);
  } catch {
    throw fail('webauthn_malformed', 'authenticatorData cannot be parsed');
  }
  const expected = sha256(rpId);
  if (!Buffer.from(parsed.rpIdHash).equals(expected))
    throw fail('webauthn_rp_mismatch', 'the credential belongs to another relying party');
  if (!parsed.flags.up) throw fail('user_verification_required', 'the authenticator did not report user presence');
  if (!parsed.flags.uv)
    throw fail('user_verification_required', 'the authenticator did not verify the user (PIN or biometric)');
  return {
    counter: parsed.counter,
    backupEligible: parsed.flags.be,
    backedUp: parsed.flags.bs,
    ...(parsed.credentialID ? { credentialId: isoBase64URL.fromBuffer(parsed.credentialID) } : {}),
  };
}

/** Registration: decode the attestation object and check its authenticator data. */
export function checkAttestation(fields: Record<string, unknown>, rpId: string): AuthenticatorDataFacts {
  const bytes = decodeB64url(fields['attestationObject'], 'attestationObject');
  let authData: Bytes;
  try {
    authData = decodeAttestationObject(bytes).get('authData');
  } catch {
    throw fail('webauthn_malformed', 'attestationObject cannot be decoded');
  }
  if (!(authData instanceof Uint8Array))
    throw fail('webauthn_malformed', 'attestationObject has no authenticator data');
  const facts = checkAuthenticatorData(authData, rpId);
  if (!facts.credentialId) throw fail('webauthn_malformed', 'attestationObject carries no credential');
  return facts;
}

/** Authentication: check the assertion's authenticator data and the signature counter. */
export function checkAssertion(
  fields: Record<string, unknown>,
  rpId: string,
  storedCounter: number,
): AuthenticatorDataFacts {
  const authData = decodeB64url(fields['authenticatorData'], 'authenticatorData');
  decodeB64url(fields['signature'], 'signature');
  const facts = checkAuthenticatorData(authData, rpId);
  // WebAuthn §7.2 step 21: a counter that does not grow (when either side is non-zero) hints at a cloned authenticator.
  if ((facts.counter !== 0 || storedCounter !== 0) && facts.counter <= storedCounter) {
    throw fail(
      'credential_counter_regressed',
      "the authenticator's signature counter went backwards; it may have been cloned",
    );
  }
  return facts;
}
