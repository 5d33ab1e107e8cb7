import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { encodeCBOR, type CBORType } from '@levischuck/tiny-cbor';

/**
 * A software passkey authenticator for tests: it produces real WebAuthn registration ('none'
 * attestation) and assertion responses with ES256 keys from node:crypto, so the server verifies
 * them with @simplewebauthn/server exactly as it would a browser's. CBOR comes from tiny-cbor
 * (a dependency of @simplewebauthn/server), never hand-rolled. Knobs exist to break each check.
 */
export interface SoftCredential {
  id: string;
  privateKey: KeyObject;
  rpId: string;
  userHandle: string;
  counter: number;
}

export interface CeremonyTweaks {
  origin?: string;
  rpId?: string;
  /** Leave the user-verified flag off. */
  noUserVerification?: boolean;
  /** Use this signature counter instead of the next one. */
  counter?: number;
  /** Answer this challenge instead of the options' one. */
  challenge?: string;
  /** create(): register the key of this existing credential again instead of a new one. */
  reuseCredentialId?: string;
  /** Flip a bit of the signature. */
  badSignature?: boolean;
  type?: string;
  crossOrigin?: boolean;
  /** create(): the authenticator's AAGUID (a UUID; all zeros unless given). */
  aaguid?: string;
  /**
   * create(): a `packed` attestation statement instead of `none`: signed by the credential's own key
   * (`self`), or by an attestation key with its certificate chain (`x5c`, DER, leaf first).
   */
  packed?: 'self' | { privateKey: KeyObject; x5c: Buffer[] };
}

const b64url = (bytes: Uint8Array | Buffer) => Buffer.from(bytes).toString('base64url');
const sha = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

// Flags (WebAuthn §6.1): UP, UV, BE, BS, AT
const UP = 0x01,
  UV = 0x04,
  BE = 0x08,
  BS = 0x10,
  AT = 0x40;

export class SoftAuthenticator {
  readonly credentials: SoftCredential[] = [];

  constructor(readonly origin: string) {}

  private clientData(type: string, challenge: string, tweaks: CeremonyTweaks): Buffer {
    return Buffer.from(
      JSON.stringify({
        type: tweaks.type ?? type,
        challenge: tweaks.challenge ?? challenge,
        origin: tweaks.origin ?? this.origin,
        crossOrigin: tweaks.crossOrigin ?? false,
      }),
    );
  }

  private authData(rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
    const counterBuf = Buffer.alloc(4);
    counterBuf.writeUInt32BE(counter);
    return Buffer.concat([sha(rpId), Buffer.from([flags]), counterBuf, ...(attested ? [attested] : [])]);
  }

  /** navigator.credentials.create() for `options` (PublicKeyCredentialCreationOptionsJSON). */
  create(options: any, tweaks: CeremonyTweaks = {}): any {
    const rpId = tweaks.rpId ?? options.rp.id;
    const reused = tweaks.reuseCredentialId
      ? this.credentials.find((c) => c.id === tweaks.reuseCredentialId)
      : undefined;
    const privateKey = reused?.privateKey ?? generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const jwk = privateKey.export({ format: 'jwk' }) as { x: string; y: string };
    const cose = encodeCBOR(
      new Map<number, CBORType>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, new Uint8Array(Buffer.from(jwk.x, 'base64url'))],
        [-3, new Uint8Array(Buffer.from(jwk.y, 'base64url'))],
      ]),
    );
    const credId = reused ? Buffer.from(reused.id, 'base64url') : randomBytes(16);
    const idLen = Buffer.alloc(2);
    idLen.writeUInt16BE(credId.length);
    const aaguid = tweaks.aaguid ? Buffer.from(tweaks.aaguid.replace(/-/g, ''), 'hex') : Buffer.alloc(16);
    const attested = Buffer.concat([aaguid, idLen, credId, Buffer.from(cose)]);
    const flags = UP | (tweaks.noUserVerification ? 0 : UV) | BE | BS | AT;
    const authData = this.authData(rpId, flags, tweaks.counter ?? 0, attested);
    const clientDataJSON = this.clientData('webauthn.create', options.challenge, tweaks);
    // WebAuthn §8.2: a packed statement signs authData || SHA-256(clientDataJSON), ES256 (-7).
    const packed = tweaks.packed;
    const attStmt = new Map<string, CBORType>();
    if (packed) {
      const signer = packed === 'self' ? privateKey : packed.privateKey;
      attStmt.set('alg', -7);
      attStmt.set('sig', new Uint8Array(sign('sha256', Buffer.concat([authData, sha(clientDataJSON)]), signer)));
      if (packed !== 'self')
        attStmt.set(
          'x5c',
          packed.x5c.map((der) => new Uint8Array(der)),
        );
    }
    const attestationObject = encodeCBOR(
      new Map<string, CBORType>([
        ['fmt', packed ? 'packed' : 'none'],
        ['attStmt', attStmt],
        ['authData', new Uint8Array(authData)],
      ]),
    );
    const id = b64url(credId);
    if (!reused)
      this.credentials.push({ id, privateKey, rpId, userHandle: options.user.id, counter: tweaks.counter ?? 0 });
    return {
      id,
      rawId: id,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        attestationObject: b64url(attestationObject),
        transports: ['internal', 'hybrid'],
      },
    };
  }

  /** navigator.credentials.get() for `options`: the first allowed credential (or `credId`). */
  get(options: any, tweaks: CeremonyTweaks & { credId?: string } = {}): any {
    const allowed: string[] = (options.allowCredentials ?? []).map((c: { id: string }) => c.id);
    const credential = this.credentials.find((c) =>
      tweaks.credId ? c.id === tweaks.credId : allowed.length === 0 || allowed.includes(c.id),
    );
    if (!credential) throw new Error('no matching credential on this soft authenticator');
    credential.counter = tweaks.counter ?? credential.counter + 1;
    const authData = this.authData(
      tweaks.rpId ?? credential.rpId,
      UP | (tweaks.noUserVerification ? 0 : UV) | BE | BS,
      credential.counter,
    );
    const clientDataJSON = this.clientData('webauthn.get', options.challenge, tweaks);
    const signature = sign('sha256', Buffer.concat([authData, sha(clientDataJSON)]), credential.privateKey);
    if (tweaks.badSignature) signature[signature.length - 1]! ^= 0x01;
    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: credential.userHandle,
      },
    };
  }
}
