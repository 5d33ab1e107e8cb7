import {
  NOTE_SIGNATURE_COSIGNATURE_V1,
  noteKeyId,
  signEd25519,
  verifyEd25519,
  type NoteSigner,
  type NoteVerifier,
  type ParsedNote,
} from './signed-note.js';

/**
 * C2SP tlog-cosignature (https://c2sp.org/tlog-cosignature), cosignature/v1: the witness signs
 * `cosignature/v1\ntime <t>\n` + the checkpoint text with Ed25519; the signature line carries
 * key ID (type 0x04) || 8-byte big-endian t || the 64-byte signature.
 */

const signedMessage = (text: string, time: bigint) => Buffer.from(`cosignature/v1\ntime ${time}\n${text}`, 'utf8');

/** A cosignature line (with its newline) over a checkpoint's text at `time` (seconds since the epoch). */
export function cosignatureLine(text: string, witness: NoteSigner, time: number): string {
  const t = BigInt(Math.floor(time));
  const stamp = Buffer.alloc(8);
  stamp.writeBigUInt64BE(t);
  const keyId = noteKeyId(witness.name, NOTE_SIGNATURE_COSIGNATURE_V1, witness.publicKey);
  const signature = signEd25519(signedMessage(text, t), witness.privateKey);
  return `\u2014 ${witness.name} ${Buffer.concat([keyId, stamp, signature]).toString('base64')}\n`;
}

/** The time of the first valid cosignature by `witness` on the note, or null when it has none. */
export function cosignatureTime(note: ParsedNote, witness: NoteVerifier): number | null {
  const keyId = noteKeyId(witness.name, NOTE_SIGNATURE_COSIGNATURE_V1, witness.publicKey);
  for (const s of note.signatures) {
    if (s.name !== witness.name || !s.keyId.equals(keyId) || s.signature.length !== 72) continue;
    const time = s.signature.readBigUInt64BE(0);
    if (time >= 2n ** 63n) continue;
    if (verifyEd25519(signedMessage(note.text, time), witness.publicKey, s.signature.subarray(8))) return Number(time);
  }
  return null;
}
