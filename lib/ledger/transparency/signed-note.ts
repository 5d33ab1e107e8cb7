import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { sha256 } from '../../crypto/sha256.js';

/**
 * C2SP signed-note (https://c2sp.org/signed-note): a UTF-8 text ending in a newline, a blank
 * line, then one line per signature, `— <key name> base64(key ID || signature)`. The key ID is
 * the first four bytes of SHA-256(key name || 0x0A || signature type || public key).
 */

/** signed-note: Ed25519 note signatures. */
export const NOTE_SIGNATURE_ED25519 = 0x01;
/** tlog-cosignature: cosignature/v1 (Ed25519 over a timestamped checkpoint). */
export const NOTE_SIGNATURE_COSIGNATURE_V1 = 0x04;

const EM_DASH = '\u2014';
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** signed-note: a verifier must refuse a note with more signatures than it is prepared to read. */
export const MAX_NOTE_SIGNATURES = 100;

/** An Ed25519 key that signs notes under one name. */
export interface NoteSigner {
  name: string;
  /** 32 bytes. */
  publicKey: Buffer;
  privateKey: KeyObject;
}

/** A public key a note signature or cosignature is checked against (a parsed vkey). */
export interface NoteVerifier {
  name: string;
  type: number;
  /** 32 bytes. */
  publicKey: Buffer;
  keyId: Buffer;
}

export interface NoteSignature {
  name: string;
  keyId: Buffer;
  /** What follows the key ID: 64 bytes for Ed25519, 8 + 64 for a cosignature/v1. */
  signature: Buffer;
  /** The line as it appeared, without its newline. */
  line: string;
}

export interface ParsedNote {
  /** The signed text, with its final newline. */
  text: string;
  signatures: NoteSignature[];
}

/** A note that cannot be read as signed-note specifies. */
export class NoteFormatError extends Error {
  override name = 'NoteFormatError';
}

/** signed-note key ID: SHA-256(name || 0x0A || type || public key)[:4]. */
export function noteKeyId(name: string, type: number, publicKey: Uint8Array): Buffer {
  return sha256(Buffer.concat([Buffer.from(name, 'utf8'), Buffer.from([0x0a, type]), publicKey])).subarray(0, 4);
}

/** The verifier key text (vkey): `<name>+<hex key ID>+base64(type || public key)`. */
export function formatVerifierKey(name: string, type: number, publicKey: Uint8Array): string {
  const encoded = Buffer.concat([Buffer.from([type]), publicKey]).toString('base64');
  return `${name}+${noteKeyId(name, type, publicKey).toString('hex')}+${encoded}`;
}

/** Reads a vkey; throws NoteFormatError when it is not an Ed25519 or cosignature/v1 key whose key ID matches. */
export function parseVerifierKey(vkey: string): NoteVerifier {
  // Names hold no plus sign, key IDs are hex: the key itself (base64) may hold some.
  const match = /^([^+]+)\+([0-9a-f]{8})\+(.+)$/.exec(vkey.trim());
  if (!match || !isKeyName(match[1]!)) throw new NoteFormatError('a verifier key is name+keyid+key');
  const [, name, idHex, encoded] = match as unknown as [string, string, string, string];
  const raw = Buffer.from(encoded, 'base64');
  if (raw.toString('base64') !== encoded || raw.length !== 33)
    throw new NoteFormatError('the key is not 33 bytes of base64');
  const type = raw[0]!;
  if (type !== NOTE_SIGNATURE_ED25519 && type !== NOTE_SIGNATURE_COSIGNATURE_V1)
    throw new NoteFormatError(`signature type 0x${type.toString(16).padStart(2, '0')} is not supported`);
  const publicKey = raw.subarray(1);
  const keyId = noteKeyId(name, type, publicKey);
  if (keyId.toString('hex') !== idHex) throw new NoteFormatError('the key ID does not match the key');
  return { name, type, publicKey, keyId };
}

/** The raw 32-byte Ed25519 public key of a KeyObject. */
export function rawEd25519PublicKey(key: KeyObject): Buffer {
  const spki = key.export({ format: 'der', type: 'spki' });
  return Buffer.from(spki.subarray(ED25519_SPKI_PREFIX.length));
}

function ed25519PublicKey(raw: Buffer): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** A signer from a PKCS #8 private key (as stored sealed). */
export function noteSignerFromPkcs8(name: string, pkcs8: Buffer): NoteSigner {
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return { name, privateKey, publicKey: rawEd25519PublicKey(createPublicKey(privateKey)) };
}

/** One signature line (with its newline) of `text` by `signer`. */
export function noteSignatureLine(text: string, signer: NoteSigner): string {
  const signature = sign(null, Buffer.from(text, 'utf8'), signer.privateKey);
  const keyId = noteKeyId(signer.name, NOTE_SIGNATURE_ED25519, signer.publicKey);
  return `${EM_DASH} ${signer.name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
}

/** Signs `text` with every signer (each a line, in order): the whole note. */
export function signNote(text: string, signers: readonly NoteSigner[]): string {
  assertText(text);
  if (signers.length === 0) throw new RangeError('a note needs at least one signer');
  return `${text}\n${signers.map((s) => noteSignatureLine(text, s)).join('')}`;
}

/** Splits a note into its text and signature lines; throws NoteFormatError when it is malformed. */
export function parseNote(note: string): ParsedNote {
  if (!note.endsWith('\n')) throw new NoteFormatError('a note ends with a newline');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new NoteFormatError('a note has a blank line before its signatures');
  const text = note.slice(0, split + 1);
  assertText(text);
  const lines = note.slice(split + 2, -1).split('\n');
  if (lines.length > MAX_NOTE_SIGNATURES) throw new NoteFormatError('too many signatures');
  const signatures = lines.map((line) => {
    const match = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(line);
    if (!match || !isKeyName(match[1]!)) throw new NoteFormatError('a signature line is "— name base64"');
    const raw = Buffer.from(match[2]!, 'base64');
    if (raw.length < 5 || raw.toString('base64') !== match[2]) throw new NoteFormatError('a signature is too short');
    return { name: match[1]!, keyId: raw.subarray(0, 4), signature: raw.subarray(4), line };
  });
  return { text, signatures };
}

/** True when one of the note's lines is a valid Ed25519 signature by `verifier`. */
export function isSignedBy(note: ParsedNote, verifier: NoteVerifier): boolean {
  if (verifier.type !== NOTE_SIGNATURE_ED25519) return false;
  const key = ed25519PublicKey(verifier.publicKey);
  return note.signatures.some(
    (s) =>
      s.name === verifier.name &&
      s.keyId.equals(verifier.keyId) &&
      s.signature.length === 64 &&
      verify(null, Buffer.from(note.text, 'utf8'), key, s.signature),
  );
}

/** Ed25519 verification of raw bytes under a 32-byte public key. */
export function verifyEd25519(message: Buffer, publicKey: Buffer, signature: Buffer): boolean {
  return signature.length === 64 && verify(null, message, ed25519PublicKey(publicKey), signature);
}

export function signEd25519(message: Buffer, privateKey: KeyObject): Buffer {
  return sign(null, message, privateKey);
}

/** signed-note: key names are non-empty and hold no Unicode spaces or plus signs. */
function isKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

function assertText(text: string): void {
  if (!text.endsWith('\n')) throw new NoteFormatError('a note text ends with a newline');
  // signed-note: no control characters other than newline.
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(text)) throw new NoteFormatError('control characters in the note');
}
