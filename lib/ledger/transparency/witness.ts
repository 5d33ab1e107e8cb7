import { fail } from '../../errors/keyplane-error.js';
import { parseCheckpoint, type LogCheckpoint } from './checkpoint-note.js';
import { isSignedBy, NoteFormatError, parseNote, type NoteVerifier, type ParsedNote } from './signed-note.js';
import { verifyConsistencyProof } from './tiles.js';

/**
 * C2SP tlog-witness (https://c2sp.org/tlog-witness): the body of `POST <prefix>/add-checkpoint`
 * and the checks a witness makes before it cosigns. The witness's own latest size per log is
 * read and advanced by the caller (a conditional update, so two workers never cosign a fork).
 */

/** tlog-witness: a proof of a tree under 2^63 leaves has at most 63 hashes. */
export const MAX_CONSISTENCY_PROOF_HASHES = 63;

export interface AddCheckpointRequest {
  oldSize: number;
  proof: Buffer[];
  note: string;
}

/** Reads `old <size>\n<base64 hash>\n…\n\n<checkpoint note>`; throws `invalid_request` when malformed. */
export function parseAddCheckpointRequest(body: string): AddCheckpointRequest {
  const blank = body.indexOf('\n\n');
  const head = blank < 0 ? null : body.slice(0, blank).split('\n');
  const oldLine = head?.[0] === undefined ? null : /^old (0|[1-9][0-9]{0,15})$/.exec(head[0]);
  if (!head || !oldLine || !Number.isSafeInteger(Number(oldLine[1])))
    throw fail('invalid_request', 'the body starts with "old <size>", the proof lines and a blank line');
  const proofLines = head.slice(1);
  if (proofLines.length > MAX_CONSISTENCY_PROOF_HASHES)
    throw fail('invalid_request', `a consistency proof has at most ${MAX_CONSISTENCY_PROOF_HASHES} hashes`);
  const proof = proofLines.map((line) => {
    const hash = Buffer.from(line, 'base64');
    if (hash.length !== 32 || hash.toString('base64') !== line)
      throw fail('invalid_request', 'each proof line is a base64 SHA-256 hash');
    return hash;
  });
  return { oldSize: Number(oldLine[1]), proof, note: body.slice(blank + 2) };
}

/** A log this instance witnesses: its origin and the keys its checkpoints are signed with. */
export interface WitnessedLog {
  origin: string;
  keys: NoteVerifier[];
}

/** What the witness holds for a log: the latest checkpoint it cosigned. */
export interface WitnessedState {
  size: number;
  root: Buffer;
}

export type WitnessVerdict =
  | { cosign: true; note: ParsedNote; checkpoint: LogCheckpoint }
  /** tlog-witness: 409 with `text/x.tlog.size`, the size the witness holds. */
  | { cosign: false; heldSize: number };

/**
 * The checks of tlog-witness in its order: a known origin (404), a signature by that log's key
 * (403), an old size not beyond the checkpoint (400), the old size the witness holds (409 with
 * that size), the same root at the same size (409), then the consistency proof (422).
 */
export function checkAddCheckpoint(
  request: AddCheckpointRequest,
  logs: ReadonlyMap<string, WitnessedLog>,
  held: WitnessedState | undefined,
): WitnessVerdict {
  let note: ParsedNote;
  let checkpoint: LogCheckpoint;
  try {
    note = parseNote(request.note);
    checkpoint = parseCheckpoint(note.text);
  } catch (error) {
    if (error instanceof NoteFormatError)
      throw fail('invalid_request', `the checkpoint is malformed: ${error.message}`);
    throw error;
  }
  const log = logs.get(checkpoint.origin);
  if (!log) throw fail('unknown_log', 'this instance witnesses no log with that origin');
  if (!log.keys.some((key) => isSignedBy(note, key)))
    throw fail('checkpoint_not_signed', "the checkpoint carries no valid signature by the log's key");
  if (request.oldSize > checkpoint.size)
    throw fail('checkpoint_older', 'the old size is larger than the checkpoint size');
  const heldSize = held?.size ?? 0;
  if (request.oldSize !== heldSize) return { cosign: false, heldSize };
  if (held && request.oldSize === checkpoint.size) {
    if (!held.root.equals(checkpoint.root))
      throw fail('checkpoint_conflict', 'another root at the size already cosigned');
    return { cosign: true, note, checkpoint };
  }
  if (
    held &&
    !verifyConsistencyProof({
      oldSize: held.size,
      newSize: checkpoint.size,
      oldRoot: held.root,
      newRoot: checkpoint.root,
      proof: request.proof,
    })
  )
    throw fail('inconsistent_checkpoint', 'the consistency proof does not verify: the log forked');
  return { cosign: true, note, checkpoint };
}
