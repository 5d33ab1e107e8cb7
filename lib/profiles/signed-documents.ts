import type { KeyObject, webcrypto } from 'node:crypto';
import { decodeProtectedHeader, type JWTPayload } from 'jose';
import { signJwt, verifyJwt } from '../crypto/jwt.js';
import { sha256Hex } from '../crypto/sha256.js';
import type { DocumentKind } from './documents.js';

/**
 * Every signed rollout artifact is a compact JWS (ES256, the issuer's key ring) with its own
 * `typ`, so one can never be presented as another (RFC 8725 §3.11).
 */
export const DOCUMENT_TYP: Record<DocumentKind, string> = {
  profile: 'project-trust-profile+jwt',
  plan: 'migration-plan+jwt',
};
export const ATTESTATION_TYP = 'rollout-attestation+jwt';

type PrivateKey = KeyObject | webcrypto.CryptoKey;

export interface DocumentSigner {
  kid: string;
  privateKey: PrivateKey;
}

/** Why a presented JWS is refused: not a JWS at all (or `alg: none`), or not signed by this issuer's ring. */
export class SignatureError extends Error {
  constructor(
    readonly refusal: 'unsigned' | 'invalid',
    message: string,
  ) {
    super(message);
    this.name = 'SignatureError';
  }
}

/** Signs a document version: claims `{iss, sub: project, iat, version, <kind>: document}`. */
export async function signDocument(
  kind: DocumentKind,
  input: { issuer: string; project: string; version: number; document: object; now: number },
  signer: DocumentSigner,
): Promise<{ jws: string; hash: string }> {
  const jws = signJwt(
    { typ: DOCUMENT_TYP[kind], kid: signer.kid },
    {
      version: input.version,
      [kind]: input.document,
      iss: input.issuer,
      sub: input.project,
      iat: Math.floor(input.now / 1000),
    },
    signer.privateKey,
    'ES256',
  );
  return { jws, hash: sha256Hex(jws) };
}

/** Signs an attestation: `{iss, sub: client_id, iat, project, ...facts}`. */
export async function signAttestation(
  input: { issuer: string; clientId: string; now: number; facts: Record<string, unknown> },
  signer: DocumentSigner,
): Promise<{ jws: string; hash: string }> {
  const jws = signJwt(
    { typ: ATTESTATION_TYP, kid: signer.kid },
    { ...input.facts, iss: input.issuer, sub: input.clientId, iat: Math.floor(input.now / 1000) },
    signer.privateKey,
    'ES256',
  );
  return { jws, hash: sha256Hex(jws) };
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

/**
 * Verifies a signed document against the issuer's published keys: the right `typ`, ES256, a
 * `kid` of the ring, `iss` = the issuer. Anything that is not a signed compact JWS is
 * `unsigned`; a JWS by any other key (a re-signed copy) is `invalid`.
 */
export async function verifySignedDocument(
  kind: DocumentKind | 'attestation',
  jws: string,
  options: { issuer: string; publicKey: (kid: string) => KeyObject | undefined },
): Promise<{ payload: JWTPayload; kid: string; hash: string }> {
  const typ = kind === 'attestation' ? ATTESTATION_TYP : DOCUMENT_TYP[kind];
  const text = jws.trim();
  if (!COMPACT_JWS.test(text))
    throw new SignatureError(
      'unsigned',
      'this is not a signed document (a compact JWS); classify the YAML or JSON to have it signed',
    );
  let header;
  try {
    header = decodeProtectedHeader(text);
  } catch {
    throw new SignatureError('unsigned', 'the JWS header is not readable');
  }
  if (header.alg === 'none' || text.endsWith('.'))
    throw new SignatureError('unsigned', 'the document carries no signature (alg none)');
  if (header.typ !== typ) throw new SignatureError('invalid', `the JWS typ is ${String(header.typ)}, not ${typ}`);
  const key = typeof header.kid === 'string' ? options.publicKey(header.kid) : undefined;
  if (!key)
    throw new SignatureError(
      'invalid',
      'the document was not signed by this control plane (its kid is not in the JWKS)',
    );
  try {
    // Documents carry no exp: they stand until replaced.
    const { payload } = verifyJwt(text, key, { alg: 'ES256', typ, issuer: options.issuer });
    return { payload, kid: header.kid as string, hash: sha256Hex(text) };
  } catch (error) {
    throw new SignatureError(
      'invalid',
      `the signature does not verify against this control plane's keys: ${(error as Error).message}`,
    );
  }
}
