import { fail } from '#lib/errors/keyplane-error.js';
import { rateLimited } from '#lib/errors/rate-limited.js';
import { cosignatureLine } from '#lib/ledger/transparency/cosignature.js';
import { parseVerifierKey, NOTE_SIGNATURE_ED25519 } from '#lib/ledger/transparency/signed-note.js';
import { checkAddCheckpoint, parseAddCheckpointRequest, type WitnessedLog } from '#lib/ledger/transparency/witness.js';
import type { SharedState } from '#lib/runtime/shared-state/types.js';
import type { ControlPlaneServices } from '../context.js';
import type { Storage } from '../storage/interface.js';
import type { NoteKeyRing } from './note-keys.js';

export interface LogWitnessOptions {
  storage: Storage;
  state: SharedState;
  noteKeys: NoteKeyRing;
  /** `ledger.witness.logs` read by `witnessedLogs`. */
  logs: ReadonlyMap<string, WitnessedLog>;
  perOriginPerMinute: number;
  now: () => number;
}

/** The witness as the services run it. */
export function logWitness(
  services: Pick<ControlPlaneServices, 'storage' | 'state' | 'config' | 'now'>,
  noteKeys: NoteKeyRing,
): LogWitnessOptions {
  return {
    storage: services.storage,
    state: services.state,
    noteKeys,
    logs: witnessedLogs(services.config.ledger.witness.logs),
    perOriginPerMinute: services.config.ledger.witness.perOriginPerMinute,
    now: services.now,
  };
}

/** What `POST /receipts/add-checkpoint` answers: cosignature lines, or the size this witness holds (409). */
export type AddCheckpointAnswer = { cosignature: string } | { heldSize: number };

/** The logs of `ledger.witness.logs` by origin, each with every key listed for it. */
export function witnessedLogs(logs: ReadonlyArray<{ origin: string; key: string }>): Map<string, WitnessedLog> {
  const byOrigin = new Map<string, WitnessedLog>();
  for (const { origin, key } of logs) {
    const verifier = parseVerifierKey(key);
    if (verifier.type !== NOTE_SIGNATURE_ED25519)
      throw new Error(`the key of log ${origin} is not an Ed25519 note key`);
    const log = byOrigin.get(origin) ?? { origin, keys: [] };
    log.keys.push(verifier);
    byOrigin.set(origin, log);
  }
  return byOrigin;
}

/**
 * This instance as a C2SP tlog-witness of other logs: it cosigns a checkpoint only when it extends
 * the last one it cosigned for that origin, and it moves that size by a conditional update, so
 * two workers or replicas answering at once never cosign two forks.
 */
export async function addCheckpoint(options: LogWitnessOptions, body: string): Promise<AddCheckpointAnswer> {
  const { logs } = options;
  if (logs.size === 0) throw fail('unknown_log', 'this instance witnesses no log');
  const request = parseAddCheckpointRequest(body);
  const origin = request.note.slice(0, request.note.indexOf('\n'));
  if (logs.has(origin)) {
    const { count, ttlMs } = await options.state.incrWithTtl(`witness:${origin}`, 60_000);
    if (count > options.perOriginPerMinute) throw rateLimited(ttlMs, 'too many checkpoints of this log');
  }
  const held = await options.storage.tlog.witnessed(origin);
  const verdict = checkAddCheckpoint(request, logs, held);
  if (!verdict.cosign) return { heldSize: verdict.heldSize };
  const { checkpoint, note } = verdict;
  if (!held || checkpoint.size > held.size) {
    const moved = await options.storage.tlog.advanceWitnessed(
      origin,
      request.oldSize,
      checkpoint.size,
      checkpoint.root,
      options.now(),
    );
    // Another worker moved it first: answer as for a stale old size, with what is held now.
    if (!moved) return { heldSize: (await options.storage.tlog.witnessed(origin))?.size ?? 0 };
  }
  const witness = options.noteKeys.witness();
  return { cosignature: cosignatureLine(note.text, witness.signer, Math.floor(options.now() / 1000)) };
}
