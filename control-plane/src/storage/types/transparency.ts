import type { TileWrite } from '#lib/ledger/transparency/tiles.js';

// ---- The transparency log (docs/ledger.md#verifying-with-transparency-tools) ----

export type NoteKeyPurpose = 'log' | 'witness';

/** An Ed25519 note key: `log` signs checkpoints, `witness` cosigns other logs' checkpoints. */
export interface StoredNoteKey {
  /** The C2SP key ID, hex. */
  keyId: string;
  purpose: NoteKeyPurpose;
  name: string;
  publicKey: Buffer;
  /** PKCS #8, sealed under the master key. */
  sealedPrivateKey: Buffer;
  createdAt: number;
  /** When a rotated key stops signing (the overlap's end); null while it is the newest. */
  retiresAt: number | null;
}

/** A sealed epoch's place in the log: the log's size once the epoch was appended, and its signed note. */
export interface LoggedEpoch {
  epoch: number;
  treeSize: number;
  note: string;
}

export interface TransparencyLogStore {
  /** The last epoch appended to the log, or undefined while the log is empty. */
  head(): Promise<LoggedEpoch | undefined>;
  logged(epoch: number): Promise<LoggedEpoch | undefined>;
  /** Sealed epochs not yet in the log (sealed before it existed), oldest first. */
  unloggedEpochs(limit: number): Promise<number[]>;
  /** An epoch's tree keys in their tree order. */
  epochKeys(epoch: number): Promise<Buffer[]>;
  tile(level: number, index: number): Promise<Buffer | undefined>;
  putTiles(tiles: readonly TileWrite[]): Promise<void>;
  /** Places an epoch's receipts at `firstIndex` + their tree index and stores the log's size and note. */
  appendEpoch(epoch: number, firstIndex: number, treeSize: number, note: string): Promise<void>;
  /** Tree keys at log positions [start, start + count). */
  entries(start: number, count: number): Promise<Buffer[]>;
  addCosignature(epoch: number, witness: string, line: string, at: number): Promise<void>;
  /** The cosignature lines of an epoch's note, by witness name. */
  cosignatures(epoch: number): Promise<string[]>;
  /** The largest log size `witness` cosigned, 0 when none. */
  cosignedSize(witness: string): Promise<number>;
  noteKeys(purpose: NoteKeyPurpose): Promise<StoredNoteKey[]>;
  insertNoteKey(key: StoredNoteKey): Promise<void>;
  /** Sets `retiresAt` on every key of `purpose` that has none, except `keep`. */
  retireNoteKeys(purpose: NoteKeyPurpose, keep: string, retiresAt: number): Promise<void>;
  /** What this instance, as a witness, cosigned last for `origin`. */
  witnessed(origin: string): Promise<{ size: number; root: Buffer } | undefined>;
  /**
   * Moves `origin` from `oldSize` to `size`/`root` only if the witness still holds `oldSize`
   * (0: nothing yet); false when another worker or replica moved it first.
   */
  advanceWitnessed(origin: string, oldSize: number, size: number, root: Buffer, at: number): Promise<boolean>;
}
